package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func writeRichHTML(t *testing.T) (string, []Chart) {
	t.Helper()
	rep := Build(richRun(t))
	var b bytes.Buffer
	if err := Write(&b, rep, "html"); err != nil {
		t.Fatal(err)
	}
	charts, err := Charts(rep, "")
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), charts
}

// The page must open with no network: nothing it holds may be fetched.
// SVG's xmlns attributes are names, never loaded.
func TestHTMLIsSelfContained(t *testing.T) {
	page, charts := writeRichHTML(t)
	for _, banned := range []string{"<script", "<link", "<img", "<iframe", "@import"} {
		if strings.Contains(page, banned) {
			t.Errorf("page holds %s", banned)
		}
	}
	withoutNamespaces := regexp.MustCompile(`xmlns(:\w+)?="[^"]*"`).ReplaceAllString(page, "")
	if m := regexp.MustCompile(`(?i)(https?:|//[a-z0-9.-]+\.[a-z]{2,}/)`).FindString(withoutNamespaces); m != "" {
		t.Errorf("page refers to %q outside itself", m)
	}
	if !strings.Contains(page, "@font-face{font-family:\"Liberation Sans\"") {
		t.Error("page does not embed the chart font")
	}
	for _, ch := range charts {
		if !strings.Contains(page, `<figure id="chart-`+ch.ID+`"`) {
			t.Errorf("chart %s missing", ch.ID)
		}
	}
	for _, want := range []string{"Intel Xeon Gold 6338", "ipvlan: kernel module not available", "connection reset by peer", "name: charts"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLSaysWhyAChartIsMissing(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Build(fixture(t)), "html"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), emptyReasons["flows"]) {
		t.Error("a run with one flow count does not say why it has no flows chart")
	}
}

func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the HTML report is not checked in a browser")
	return ""
}

// chromium runs a headless browser on the page with the network shut off
// as far as its flags go, and returns its stdout and stderr.
func chromium(t *testing.T, bin, page string, extra ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errOut.String())
	}
	return out.String(), errOut.String()
}

// consoleTrouble finds what the page got wrong in chromium's log: script
// or console errors, and anything it tried to load.
var consoleTrouble = regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught|Failed to load resource|net::ERR_).*$`)

// TestHTMLInChromium opens the report in a real browser, takes a
// screenshot and reads back the DOM. Set CNBENCH_SCREENSHOT_DIR to keep
// the screenshot for a look.
func TestHTMLInChromium(t *testing.T) {
	bin := findChromium(t)
	html, charts := writeRichHTML(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}

	shotDir := os.Getenv("CNBENCH_SCREENSHOT_DIR")
	if shotDir == "" {
		shotDir = dir
	}
	shot := filepath.Join(shotDir, "report.png")
	_, stderr := chromium(t, bin, page, "--screenshot="+shot, "--window-size=1400,4000", "--hide-scrollbars")
	if m := consoleTrouble.FindAllString(stderr, -1); len(m) > 0 {
		t.Errorf("browser reported trouble:\n%s", strings.Join(m, "\n"))
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 4000 {
		t.Errorf("screenshot is %v, want 1400x4000", b)
	}
	if blank(img) {
		t.Error("screenshot is blank")
	}

	dom, stderr := chromium(t, bin, page, "--dump-dom")
	if m := consoleTrouble.FindAllString(stderr, -1); len(m) > 0 {
		t.Errorf("browser reported trouble:\n%s", strings.Join(m, "\n"))
	}
	for _, ch := range charts {
		// The browser's own serialisation: the figure survived parsing
		// and holds its SVG, not escaped text.
		re := regexp.MustCompile(`<figure id="chart-` + regexp.QuoteMeta(ch.ID) + `"[^>]*>\s*<svg[^>]*viewBox`)
		if !re.MatchString(dom) {
			t.Errorf("chart %s is not an SVG in the rendered page", ch.ID)
		}
	}
	if n := strings.Count(dom, "<svg"); n != len(charts) {
		t.Errorf("rendered page has %d SVGs, want %d", n, len(charts))
	}
}
