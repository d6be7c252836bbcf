package cpu

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat; it is 100 on every architecture Linux
// exports it for.
const userHZ = 100

// Softirq returns the machine-wide time spent in softirq context so far.
// Packet processing for veth, bridges and the receive path runs there and
// is charged to no cgroup, so it is reported on its own.
func Softirq() (time.Duration, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read softirq time: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// cpu user nice system idle iowait irq softirq ...
		if len(fields) > 7 && fields[0] == "cpu" {
			ticks, err := strconv.ParseInt(fields[7], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse /proc/stat softirq: %w", err)
			}
			return time.Duration(ticks) * time.Second / userHZ, nil
		}
	}
	return 0, fmt.Errorf("read softirq time: no cpu line in /proc/stat")
}
