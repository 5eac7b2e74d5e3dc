package transport

import (
	"context"
	"slices"
	"strings"
)

// Token scopes (distribution's token spec: "repository:<path>:<actions>"),
// carried by a request's context per registry host, as containerd's
// docker.WithScope and oras-go's auth.AppendRepositoryScope do: a push
// that mounts asks one token for pull,push here and pull there.

// The actions of a repository scope.
const (
	ActionPull = "pull"
	ActionPush = "push"
)

// RepositoryScope is the scope of actions on the repository at path.
func RepositoryScope(path string, actions ...string) string {
	actions = cleanActions(actions)
	if path == "" || len(actions) == 0 {
		return ""
	}
	return "repository:" + path + ":" + strings.Join(actions, ",")
}

type scopesKey struct{ host string }

// WithScopes adds scopes to what ctx's requests to host ask a token for.
func WithScopes(ctx context.Context, host string, scopes ...string) context.Context {
	if len(scopes) == 0 {
		return ctx
	}
	return context.WithValue(ctx, scopesKey{strings.ToLower(host)}, cleanScopes(append(scopesFor(ctx, host), scopes...)))
}

// WithRepositoryScope adds the scope of actions on host's repository path.
func WithRepositoryScope(ctx context.Context, host, path string, actions ...string) context.Context {
	if s := RepositoryScope(path, actions...); s != "" {
		return WithScopes(ctx, host, s)
	}
	return ctx
}

// scopesFor is the clean scope set ctx asks of host (sorted, each resource
// once with its actions merged).
func scopesFor(ctx context.Context, host string) []string {
	s, _ := ctx.Value(scopesKey{strings.ToLower(host)}).([]string)
	return slices.Clone(s)
}

// cleanScopes merges the actions of scopes naming the same resource, drops
// scopes without actions, and sorts: equal sets give equal cache keys.
func cleanScopes(scopes []string) []string {
	type resource struct{ typ, name string }
	actions := map[resource][]string{}
	var out []string
	for _, s := range scopes {
		i := strings.Index(s, ":")
		j := strings.LastIndex(s, ":")
		if i < 0 || j == i {
			if s != "" {
				out = append(out, s)
			}
			continue
		}
		r := resource{s[:i], s[i+1 : j]}
		for a := range strings.SplitSeq(s[j+1:], ",") {
			if a != "" {
				actions[r] = append(actions[r], a)
			}
		}
	}
	for r, as := range actions {
		if as = cleanActions(as); len(as) > 0 {
			out = append(out, r.typ+":"+r.name+":"+strings.Join(as, ","))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cleanActions sorts and de-duplicates actions; "*" stands for all.
func cleanActions(actions []string) []string {
	out := slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == "" })
	if slices.Contains(out, "*") {
		return []string{"*"}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
