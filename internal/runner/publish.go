package runner

// nativePublishedPort is where the native engine's server listens in modes
// that publish its port before it exists (docker run -p, CNI portmap).
const nativePublishedPort = 5301

// publishedPort is the port an engine's server listens on in such modes.
func publishedPort(engine string) int {
	switch engine {
	case "iperf3":
		return iperf3Port
	case "sockperf":
		return sockperfPort
	default:
		return nativePublishedPort
	}
}
