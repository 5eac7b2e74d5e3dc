package dockerconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// Credential helpers (the docker-credential-helpers protocol): wharf runs
// `docker-credential-NAME get|store|erase` with the server address (or,
// for store, a JSON set) on stdin, and reads {"ServerURL","Username",
// "Secret"} from stdout.
const (
	// helperTimeout bounds one helper run (10 s): a keychain helper
	// answers in milliseconds and a cloud one (ecr-login, gcr) makes one
	// HTTPS call of a second or two; a helper that hangs (a locked
	// keychain waiting for a prompt no one sees) must not hold a watch
	// round or a command for ever. The helper is killed at the deadline.
	helperTimeout = 10 * time.Second
	// helperWaitDelay is how long the pipes are kept open after the kill
	// for a child the helper started that still holds them.
	helperWaitDelay = time.Second
	// maxHelperOutput caps what is read of a helper's stdout (64 KiB): the
	// answer is one small JSON object; the largest tokens in use (Azure AD
	// access tokens) are under 10 KiB.
	maxHelperOutput = 64 << 10
	// helperNotFound is the protocol's answer for a host the helper holds
	// nothing for (docker-credential-helpers credentials.errCredentialsNotFoundMessage):
	// the protocol's own sentinel, on stdout with exit status 1.
	helperNotFound = "credentials not found in native keychain"
	// helperTokenUser is the username a helper gives for an identity token
	// (docker-credential-helpers, docker/cli's convention).
	helperTokenUser = "<token>"
)

// ErrHelper classifies a helper's failures (run, exit, answer).
var ErrHelper = errors.New("credential helper failed")

// errHelperName is the rule a helper's name breaks.
var errHelperName = errors.New("a helper is named by the suffix of docker-credential-NAME, found in PATH")

// validHelper refuses a name that is not a bare suffix: a path would run
// a program the file names rather than one found in PATH.
func validHelper(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' }) {
		return errHelperName
	}
	return nil
}

// helperAnswer is the protocol's JSON, both ways.
type helperAnswer struct {
	ServerURL string
	Username  string
	Secret    string
}

// cappedBuffer keeps the first max bytes written and drains the rest, so
// that a helper that writes too much is not blocked on a full pipe (it is
// refused once it exits, or killed at the timeout).
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// errNotFound is the helper's own "nothing for this host".
var errNotFound = errors.New(helperNotFound)

// runHelper runs `docker-credential-NAME action` with stdin, bounded by
// helperTimeout and maxHelperOutput. Its errors wrap ErrHelper and name
// program and server, never the output (a helper's error may hold
// anything); errNotFound is the protocol's "not found".
func runHelper(ctx context.Context, name, action, serverURL string, stdin io.Reader) ([]byte, error) {
	prog := "docker-credential-" + name
	fail := func(why string) error {
		return fmt.Errorf("%w: %s for %s: %s", ErrHelper, prog, serverURL, why)
	}
	if err := validHelper(name); err != nil {
		return nil, fail(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, action)
	cmd.Stdin = stdin
	out := &cappedBuffer{max: maxHelperOutput}
	cmd.Stdout = out
	cmd.Stderr = nil // not read: it is not part of the protocol, and may say anything
	cmd.WaitDelay = helperWaitDelay
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, fail(fmt.Sprintf("no answer in time (limit %s)", helperTimeout))
	case out.over:
		return nil, fail(fmt.Sprintf("answer larger than %d bytes", maxHelperOutput))
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if strings.TrimSpace(out.buf.String()) == helperNotFound {
				return nil, errNotFound
			}
			return nil, fail(fmt.Sprintf("exit status %d", ee.ExitCode()))
		}
		return nil, fail(err.Error()) // not found in PATH, not executable
	}
	return out.buf.Bytes(), nil
}

// HelperGet runs `docker-credential-NAME get` for serverURL: the set, or
// found false when the helper holds nothing for it.
func HelperGet(ctx context.Context, name, serverURL string) (registrytypes.AuthConfig, bool, error) {
	out, err := runHelper(ctx, name, "get", serverURL, strings.NewReader(serverURL))
	if errors.Is(err, errNotFound) {
		return registrytypes.AuthConfig{}, false, nil
	}
	if err != nil {
		return registrytypes.AuthConfig{}, false, err
	}
	var ans helperAnswer
	if json.Unmarshal(out, &ans) != nil {
		return registrytypes.AuthConfig{}, false, fmt.Errorf("%w: docker-credential-%s for %s: answer is not the protocol's JSON", ErrHelper, name, serverURL)
	}
	if ans.Secret == "" {
		return registrytypes.AuthConfig{}, false, nil
	}
	ac := registrytypes.AuthConfig{ServerAddress: serverURL}
	if ans.Username == helperTokenUser {
		ac.IdentityToken = ans.Secret
	} else {
		ac.Username, ac.Password = ans.Username, ans.Secret
	}
	return ac, true, nil
}

// helperStore runs `docker-credential-NAME store` with ac: an identity
// token goes as the secret of the "<token>" user, as docker does.
func helperStore(ctx context.Context, name, serverURL string, ac registrytypes.AuthConfig) error {
	ans := helperAnswer{ServerURL: serverURL, Username: ac.Username, Secret: ac.Password}
	if ac.IdentityToken != "" {
		ans.Username, ans.Secret = helperTokenUser, ac.IdentityToken
	}
	b, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	_, err = runHelper(ctx, name, "store", serverURL, bytes.NewReader(b))
	return err
}

// helperErase runs `docker-credential-NAME erase` for serverURL.
func helperErase(ctx context.Context, name, serverURL string) error {
	_, err := runHelper(ctx, name, "erase", serverURL, strings.NewReader(serverURL))
	if errors.Is(err, errNotFound) {
		return nil
	}
	return err
}
