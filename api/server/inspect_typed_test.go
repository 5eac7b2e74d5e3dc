package server

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// fillAll sets every exported field reachable from v (a pointer) to a
// non-zero value, so that a field the typed gate forgets, or a field a new
// moby or image-spec version adds, shows up as a difference from the map
// gate. Strings carry characters JSON escapes; seed varies the values.
func fillAll(v reflect.Value, seed *int) {
	*seed++
	n := *seed
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillAll(v.Elem(), seed)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2025, 3, 14, 15, 9, n%60, n, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), seed)
			}
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> \"é\"", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fillAll(s.Index(i), seed)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := 0; i < 2; i++ {
			k := reflect.New(v.Type().Key()).Elem()
			fillAll(k, seed)
			e := reflect.New(v.Type().Elem()).Elem()
			fillAll(e, seed)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}

func filledLocal() *types.ImageInspect {
	seed := 0
	ii := &types.ImageInspect{}
	fillAll(reflect.ValueOf(ii), &seed)
	return ii
}

func filledRemote() *types.RemoteImageInspect {
	seed := 100
	ri := &types.RemoteImageInspect{}
	fillAll(reflect.ValueOf(ri), &seed)
	return ri
}

// emptyButSet has lists and maps that are empty but not nil, and empty
// strings: omitempty drops them and the gate's defaults bring some back.
func emptyButSet() *types.ImageInspect {
	ii := sampleInspect()
	ii.RepoTags, ii.RepoDigests = []string{}, []string{}
	ii.Config = &dockerspec.DockerOCIImageConfig{}
	c := ii.Config
	c.Env, c.Cmd, c.Entrypoint, c.OnBuild, c.Shell = []string{}, []string{}, []string{}, []string{}, []string{}
	c.Labels, c.Volumes, c.ExposedPorts = map[string]string{}, map[string]struct{}{}, map[string]struct{}{}
	ii.Legacy = types.LegacyImageFields{}
	ii.Descriptor = nil
	return ii
}

// The key guard of the typed gate: for every API version it serves, it must
// print exactly the bytes the map gate prints, for a local and a remote
// answer, full, empty and in between.
func TestTypedGateMatchesMapGate(t *testing.T) {
	remoteOf := func(ii *types.ImageInspect) *types.RemoteImageInspect {
		return &types.RemoteImageInspect{ImageInspect: *ii, Registry: "r", Digest: "sha256:dd", Tag: "t"}
	}
	noConfig := sampleInspect()
	noConfig.Config = nil
	inputs := map[string]any{
		"zero local":            &types.ImageInspect{},
		"zero remote":           &types.RemoteImageInspect{},
		"sample local":          sampleInspect(),
		"sample remote":         benchRemoteAnswer(),
		"every field local":     filledLocal(),
		"every field remote":    filledRemote(),
		"empty but set local":   emptyButSet(),
		"empty but set remote":  remoteOf(emptyButSet()),
		"no config local":       noConfig,
		"no config remote":      remoteOf(noConfig),
		"every field as remote": remoteOf(filledLocal()),
	}
	versions := []string{"1.50", "1.51", "1.52", "1.53", "1.54", "1.60"}
	for name, v := range inputs {
		legacy := reflect.ValueOf(v).Elem().FieldByName("Legacy")
		if !legacy.IsValid() {
			legacy = reflect.ValueOf(v).Elem().FieldByName("ImageInspect").FieldByName("Legacy")
		}
		leg := legacy.Interface().(types.LegacyImageFields)
		for _, ver := range versions {
			t.Run(name+"/"+ver, func(t *testing.T) {
				want, err := gateInspectMap(v, leg, ver)
				if err != nil {
					t.Fatal(err)
				}
				got, err := gateInspectTyped(v, leg, ver)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("typed gate differs from the map gate at %s:\ntyped: %s\nmap:   %s", ver, got, want)
				}
				// And gateInspect takes the typed path from 1.50.
				if via, _ := gateInspect(v, leg, ver); !bytes.Equal(via, want) {
					t.Fatalf("gateInspect at %s: %s", ver, via)
				}
			})
		}
	}
}

func BenchmarkGateInspectMap(b *testing.B) {
	v := benchRemoteAnswer()
	for b.Loop() {
		if _, err := gateInspectMap(v, v.Legacy, "1.50"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGateInspectTyped(b *testing.B) {
	v := benchRemoteAnswer()
	for b.Loop() {
		if _, err := gateInspectTyped(v, v.Legacy, "1.50"); err != nil {
			b.Fatal(err)
		}
	}
}
