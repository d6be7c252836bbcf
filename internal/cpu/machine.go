package cpu

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat; it is 100 on every architecture Linux
// exports it for.
const userHZ = 100

// Machine is the machine-wide CPU time that no cgroup is charged, summed
// over all CPUs since boot.
type Machine struct {
	// Softirq is time in softirq context: packet processing for veth,
	// bridges and the receive path runs there.
	Softirq time.Duration
	// Steal is time the hypervisor gave this machine's virtual CPUs to
	// someone else while they had work. A benchmark that loses CPU this
	// way measures its neighbours as much as its network.
	Steal time.Duration
}

// ReadMachine reads the machine's softirq and steal time so far.
func ReadMachine() (Machine, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return Machine{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	defer f.Close()
	return parseStat(f)
}

func parseStat(r io.Reader) (Machine, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		// cpu user nice system idle iowait irq softirq steal ...; steal
		// exists since Linux 2.6.11.
		if len(fields) < 9 {
			return Machine{}, fmt.Errorf("read machine CPU time: short cpu line in /proc/stat: %q", sc.Text())
		}
		var ticks [2]int64
		for i, col := range []int{7, 8} {
			n, err := strconv.ParseInt(fields[col], 10, 64)
			if err != nil {
				return Machine{}, fmt.Errorf("read machine CPU time: parse /proc/stat: %w", err)
			}
			ticks[i] = n
		}
		return Machine{Softirq: fromTicks(ticks[0]), Steal: fromTicks(ticks[1])}, nil
	}
	if err := sc.Err(); err != nil {
		return Machine{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	return Machine{}, fmt.Errorf("read machine CPU time: no cpu line in /proc/stat")
}

func fromTicks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// Sub is the time between two readings.
func (m Machine) Sub(earlier Machine) Machine {
	return Machine{Softirq: m.Softirq - earlier.Softirq, Steal: m.Steal - earlier.Steal}
}
