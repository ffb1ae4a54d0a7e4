// pack writes a single-layer container image as an OCI image layout in a tar archive, which
// `ctr images import` reads without a registry and whose manifest digest it keeps (a docker-archive
// import re-synthesizes the manifest). The layer holds the files given, owned by root, with a fixed
// modification time, so the same files give the same digest on every machine.
//
// Usage: pack -o image.tar -name ko.local/x:v1 [-name other:v1 ...] -entrypoint /app/x [-user 65532]
//
//	-file /app/x=/path/to/binary [-file ...] [-dir /tmp=1777 ...] [-env K=V ...]
//
// Every -name is written into the archive's index as its own descriptor of the one manifest
// (annotation io.containerd.image.name), so containerd imports the same image under each name.
// It prints {"digest": "sha256:…", "names": [...]} on stdout.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotation containerd's importer names an image by.
const containerdName = "io.containerd.image.name"

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var names, files, dirs, env list
	out := flag.String("o", "", "the archive to write")
	entrypoint := flag.String("entrypoint", "", "the image's entrypoint (one path)")
	user := flag.String("user", "", "the image's numeric user, e.g. 65532")
	flag.Var(&names, "name", "a name to import the image under (repeatable)")
	flag.Var(&files, "file", "IMAGE_PATH=HOST_PATH, a file of the layer, mode 0755 (repeatable)")
	flag.Var(&dirs, "dir", "IMAGE_PATH=OCTAL_MODE, an empty directory of the layer (repeatable)")
	flag.Var(&env, "env", "K=V of the image's environment (repeatable)")
	flag.Parse()
	if *out == "" || *entrypoint == "" || len(names) == 0 || len(files) == 0 {
		fail(fmt.Errorf("-o, -entrypoint, -name and -file are required"))
	}
	layer, err := layerOf(files, dirs)
	if err != nil {
		fail(err)
	}
	img, err := imageOf(layer, *entrypoint, *user, env)
	if err != nil {
		fail(err)
	}
	digest, err := writeArchive(*out, img, names)
	if err != nil {
		fail(err)
	}
	report, _ := json.Marshal(map[string]any{"digest": digest.String(), "names": []string(names)})
	fmt.Println(string(report))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pack:", err)
	os.Exit(1)
}

// layerOf is an uncompressed tar: importing it costs no decompression, and its digest is its diff ID.
func layerOf(files, dirs list) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	written := map[string]bool{}
	parents := func(p string) error {
		var chain []string
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			chain = append([]string{d}, chain...)
		}
		for _, d := range chain {
			if written[d] {
				continue
			}
			written[d] = true
			hdr := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
		}
		return nil
	}
	sort.Strings(dirs)
	for _, spec := range dirs {
		target, modeText, ok := strings.Cut(spec, "=")
		mode, err := strconv.ParseInt(modeText, 8, 32)
		if !ok || err != nil || !path.IsAbs(target) {
			return nil, fmt.Errorf("-dir %q: want /PATH=OCTAL_MODE", spec)
		}
		if err := parents(target); err != nil {
			return nil, err
		}
		written[target] = true
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(target, "/") + "/", Mode: mode, ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	for _, spec := range files {
		target, source, ok := strings.Cut(spec, "=")
		if !ok || !path.IsAbs(target) {
			return nil, fmt.Errorf("-file %q: want /IMAGE_PATH=HOST_PATH", spec)
		}
		data, err := os.ReadFile(filepath.Clean(source))
		if err != nil {
			return nil, err
		}
		if err := parents(target); err != nil {
			return nil, err
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: strings.TrimPrefix(target, "/"), Mode: 0o755,
			Size: int64(len(data)), ModTime: epoch,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer), nil
}

func imageOf(layer v1.Layer, entrypoint, user string, env list) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.User = user
	cf.Config.WorkingDir = "/"
	cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	return mutate.ConfigFile(img, cf)
}

// writeArchive lays the image out in a temporary directory beside out and tars it into out.
func writeArchive(out string, img v1.Image, names list) (v1.Hash, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".pack-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	dir, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	for _, name := range names {
		err := dir.AppendImage(img, layout.WithPlatform(platform), layout.WithAnnotations(map[string]string{containerdName: name}))
		if err != nil {
			return v1.Hash{}, err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return digest, tarDirectory(tmp, out)
}

func tarDirectory(root, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
