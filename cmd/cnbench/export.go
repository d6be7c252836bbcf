package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"cnbench/internal/cleanup"
	"cnbench/internal/export"
	"cnbench/internal/model"
	"cnbench/internal/store"
)

func newExportCommand() *cobra.Command {
	var db, out string
	cmd := &cobra.Command{
		Use:   "export [RUN]",
		Short: "Write a stored run to one portable JSON file",
		Long: `Export writes a run with every sample (latency histograms included), the
scenario and the machine's fingerprint to one versioned JSON file. report,
plot and compare accept such a file wherever they take a run number, so
results travel without the database. Without RUN, the latest run; without
-o, standard output. The format is described in docs/reports.md.`,
		Example: `  cnbench export 3 -o run3.json
  cnbench report run3.json --format html -o run3.html
  cnbench compare run3.json 5`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := loadRun(db, args)
			if err != nil {
				return err
			}
			return writeOutput(cmd, out, func(w io.Writer) error { return export.Write(w, res, time.Now()) })
		},
	}
	cmd.Flags().StringVar(&db, "db", defaultDB, "SQLite database to read")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	return cmd
}

// loadRun resolves a RUN argument: an export file, a run number in the
// database, or, without an argument, the database's latest run.
func loadRun(db string, args []string) (*model.RunResult, error) {
	if len(args) == 1 && isExportFile(args[0]) {
		return export.ReadFile(args[0])
	}
	if len(args) == 1 {
		// A RUN that is not a number is bad input, database or not.
		if _, err := runID(nil, args); err != nil {
			return nil, err
		}
	}
	st, err := store.OpenExisting(db)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	id, err := runID(st, args)
	if err != nil {
		return nil, err
	}
	return st.LoadRun(id)
}

// isExportFile tells a file from a run number: run numbers are plain
// digits, so anything else that names a file, or looks like one, is a file.
func isExportFile(arg string) bool {
	if strings.Trim(arg, "0123456789") == "" {
		return false
	}
	_, err := os.Stat(arg)
	return err == nil || strings.ContainsAny(arg, "./")
}

// writeOutput writes to the file named, or to stdout when the name is
// empty or "-". A regular file is written beside its name and renamed
// over it once whole, so a failed write leaves what was there before, and
// no partial file. Anything else that exists under the name (a device, a
// pipe) is written to as it is and never removed or replaced: cnbench
// did not make it.
func writeOutput(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(cmd.OutOrStdout())
	}
	var err error
	if fi, statErr := os.Stat(path); statErr == nil && !fi.Mode().IsRegular() {
		err = writeInPlace(path, fi, write)
	} else {
		err = writeAndRename(path, write)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
	return nil
}

// writeInPlace writes to something that is not a regular file.
func writeInPlace(path string, fi os.FileInfo, write func(io.Writer) error) error {
	if fi.IsDir() {
		return fmt.Errorf("write %s: is a directory", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open output: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeAndRename writes a temporary file beside path and renames it over
// path once it is whole. The temporary file's name carries the writer's
// PID, so that one left by a writer that was killed is removed by the
// next write to the same path (removeOrphans).
func writeAndRename(path string, write func(io.Writer) error) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	removeOrphans(dir, base)
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*%s", tempPrefix(base), os.Getpid(), tempSuffix))
	if err != nil {
		return fmt.Errorf("create output: %w", err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if closeErr := f.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("write %s: %w", path, closeErr)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// The temporary files of writeAndRename are ".BASE.cnb-PID-RANDOM.tmp".
const tempSuffix = ".tmp"

func tempPrefix(base string) string { return "." + base + ".cnb-" }

// removeOrphans removes the temporary files of earlier writes to dir/base
// whose writer is gone: a report killed mid-write leaves one behind. A
// file of a writer still running is left to it.
func removeOrphans(dir, base string) {
	_, _ = cleanup.RemoveOrphanFiles(dir, tempPrefix(base), tempSuffix)
}
