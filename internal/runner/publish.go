package runner

// nativePublishedPort is where the native engine's server listens in modes
// that publish its port before it exists (docker run -p, CNI portmap).
const nativePublishedPort = 5301

// publishedPorts are the ports an engine's server listens on in such
// modes; the first is the one it is reached at.
func publishedPorts(engine string) []int {
	switch engine {
	case "iperf3":
		return []int{iperf3Port}
	case "sockperf":
		return []int{sockperfPort}
	case "netperf":
		return []int{netperfControlPort, netperfDataPort}
	default:
		return []int{nativePublishedPort}
	}
}
