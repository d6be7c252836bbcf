package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"cnbench/internal/docker"
	"cnbench/internal/image"
	"cnbench/internal/netns"
	"cnbench/internal/testutil"
	"cnbench/internal/version"
)

// TestImageLoadsAndRuns writes cnbench's image with its tools as a user
// would, loads the archive into a private Docker daemon (docker load) and
// runs cnbench and iperf3 from it in containers with no network, then
// has `cnbench image --load` import it into that daemon's containerd in
// kubelet's namespace, where containerd's own client lists it.
func TestImageLoadsAndRuns(t *testing.T) {
	testutil.RequireRoot(t)
	for _, p := range append(append([]string(nil), docker.Programs...), "ctr", "iperf3") {
		testutil.RequireTool(t, p)
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "img.tar")
	const tag = "cnbench:imagetest"
	out, err := exec.Command(bin, "image", "--tools", "--output", archive, "--tag", tag).CombinedOutput()
	if err != nil {
		t.Fatalf("cnbench image: %v\n%s", err, out)
	}
	t.Logf("cnbench image: %s", bytes.TrimSpace(out))
	if !strings.Contains(string(out), "wrote "+archive+": "+tag) {
		t.Errorf("cnbench image said %q, want the archive and the tag", out)
	}

	tok := netns.NewToken()
	ns, err := netns.Create(tok.Name("img"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Delete() })
	d, err := docker.Start(ns, tok, "img", docker.Config{Bip: netip.MustParsePrefix("198.19.255.1/24")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	loaded, err := d.Client.ImageLoad(ctx, f)
	if err != nil {
		t.Fatalf("docker load: %v", err)
	}
	_, _ = io.Copy(io.Discard, loaded.Body)
	loaded.Body.Close()

	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"/cnbench", "version"}, "cnbench " + version.Version},
		{[]string{"iperf3", "--version"}, "iperf 3"},
	} {
		got := runOnce(ctx, t, d, tag, tok, c.cmd)
		if !strings.Contains(got, c.want) {
			t.Errorf("%v in the image printed %q, want %q", c.cmd, got, c.want)
		}
	}

	out, err = exec.Command(bin, "image", "--load", "--containerd", filepath.Join(d.Dir, "containerd.sock"), "--tag", tag+"2").CombinedOutput()
	if err != nil {
		t.Fatalf("cnbench image --load: %v\n%s", err, out)
	}
	listed, err := exec.Command("ctr", "--address", filepath.Join(d.Dir, "containerd.sock"), "--namespace", "k8s.io", "images", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images ls: %v\n%s", err, listed)
	}
	if !strings.Contains(string(listed), tag+"2") {
		t.Errorf("containerd's k8s.io namespace lists %q, not %s2", listed, tag)
	}
}

// TestImagePushes pushes the image to a registry on loopback (the
// registry protocol as go-containerregistry serves it in memory) and
// pulls its manifest back: the digest the command printed is the one the
// registry holds, and the image's config names cnbench's version.
func TestImagePushes(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/cnbench:pushtest"
	code, out, errOut := runCLI(t, "image", "--push", ref)
	if code != 0 {
		t.Fatalf("cnbench image --push: exit %d: %s", code, errOut)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s back: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := "pushed " + ref + " (" + digest.String() + ")"; !strings.Contains(out, want) {
		t.Errorf("cnbench image said %q, want %q", out, want)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels[image.VersionLabel]; got != version.Version {
		t.Errorf("the pushed image's %s is %q, want %q", image.VersionLabel, got, version.Version)
	}
}

// runOnce runs cmd in a container of image with no network and returns
// what it printed.
//
// Equivalent to: docker run --rm --network none IMAGE CMD
func runOnce(ctx context.Context, t *testing.T, d *docker.Daemon, image string, tok netns.Token, cmd []string) string {
	t.Helper()
	created, err := d.Client.ContainerCreate(ctx, &container.Config{Image: image, Cmd: cmd, Labels: map[string]string{docker.TokenLabel: string(tok)}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatalf("create a container of %s: %v", image, err)
	}
	defer func() { _ = d.Client.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}) }()
	if err := d.Client.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %v in %s: %v", cmd, image, err)
	}
	waited, errs := d.Client.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
	select {
	case w := <-waited:
		if w.StatusCode != 0 {
			t.Errorf("%v in %s exited %d", cmd, image, w.StatusCode)
		}
	case err := <-errs:
		t.Fatalf("wait for %v: %v", cmd, err)
	}
	logs, err := d.Client.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of %v: %v", cmd, err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	_, _ = stdcopy.StdCopy(&stdout, &stderr, logs)
	return stdout.String() + stderr.String()
}
