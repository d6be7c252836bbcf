package store

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"cnbench/internal/model"
)

// When these are set, the test binary acts as a writer that records one
// sample in the case, says so on stdout, and waits to be killed.
const (
	killWriterDBEnv   = "CNBENCH_STORE_KILL_WRITER_DB"
	killWriterCaseEnv = "CNBENCH_STORE_KILL_WRITER_CASE"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(killWriterDBEnv); path != "" {
		runKilledWriter(path, os.Getenv(killWriterCaseEnv))
		return
	}
	os.Exit(m.Run())
}

func runKilledWriter(path, caseIDText string) {
	caseID, err := strconv.ParseInt(caseIDText, 10, 64)
	if err != nil {
		os.Exit(2)
	}
	s, err := Open(path)
	if err != nil {
		os.Exit(3)
	}
	smp := model.Sample{Index: 0, Started: time.Now(), Values: map[string]float64{model.ThroughputBPS: 123}}
	if err := s.AddSample(caseID, smp); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("added\n")
	time.Sleep(time.Minute) // never closes the store
	os.Exit(5)
}

func TestSampleSurvivesSIGKILL(t *testing.T) {
	s, path := openTemp(t)
	run := newRun("x", 0)
	if err := s.CreateRun(run); err != nil {
		t.Fatal(err)
	}
	cases := testCases()
	if err := s.AddCases(run.ID, cases); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killWriterDBEnv+"="+path, killWriterCaseEnv+"="+strconv.FormatInt(cases[0].ID, 10))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("added\n"))
	if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "added\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("writer did not add its sample: %q, %v (exit %v)", buf, err, cmd.ProcessState)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	cmd.Wait()

	// A fresh Store, as the next cnbench invocation would open.
	s.Close()
	reopened, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	got, err := reopened.LoadRun(run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Cases[0].Samples); n != 1 {
		t.Fatalf("%d samples after the writer was killed, want 1", n)
	}
}
