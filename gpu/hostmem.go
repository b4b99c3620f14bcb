package gpu

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// HostMemory reports the machine's available and total RAM in bytes from
// /proc/meminfo; ok is false where that cannot be read (not Linux).
func HostMemory() (available, total int64, ok bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(f[0]) {
		case "MemAvailable:":
			available = kb << 10
		case "MemTotal:":
			total = kb << 10
		}
	}
	return available, total, available > 0 && total > 0
}
