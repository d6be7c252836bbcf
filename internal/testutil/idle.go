package testutil

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TicksPerSecond is USER_HZ, the unit of /proc/stat on Linux.
const TicksPerSecond = 100

// IdleTicks reads each CPU's idle time from /proc/stat, in ticks.
func IdleTicks(t testing.TB) map[int]int64 {
	t.Helper()
	f, err := os.Open("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idle := map[int]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		id, err1 := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		ticks, err2 := strconv.ParseInt(fields[4], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable /proc/stat line %q", sc.Text())
		}
		idle[id] = ticks
	}
	return idle
}
