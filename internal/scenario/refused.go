package scenario

// refusedKeys are keys a scenario deliberately lacks, because each would
// let a file reach outside what cnbench creates: the host's interfaces,
// addresses outside its pool, paths outside the output the user chose,
// commands. A refusal of one says why instead of only listing the keys.
var refusedKeys = map[string]string{}

func init() {
	for why, keys := range map[string][]string{
		"cnbench attaches macvlan and ipvlan endpoints only to the emulated NIC it creates in its own namespace; a scenario can never name a host interface": {
			"parent", "master", "interface", "iface", "device", "dev", "nic", "link", "host_interface", "uplink"},
		"cnbench numbers every endpoint itself from its private pool 198.18.0.0/15 (RFC 2544) inside its own namespaces; a scenario cannot choose addresses": {
			"pool", "subnet", "subnets", "cidr", "address", "addresses", "ip", "ips", "gateway", "prefix", "network"},
		"results go to the database given with --db and reports to the file given with -o; a scenario names no paths": {
			"output", "output_dir", "outdir", "out", "dir", "directory", "path", "file", "db", "database", "report"},
		"cnbench names its namespaces and cgroups itself after the run (cnb-TOKEN-...); a scenario cannot pick or join one": {
			"namespace", "netns", "cgroup"},
		"a scenario is data, never code; cnbench runs only its own engines and the tools it knows": {
			"command", "commands", "cmd", "exec", "script", "hook", "hooks", "shell"},
	} {
		for _, k := range keys {
			refusedKeys[k] = why
		}
	}
}
