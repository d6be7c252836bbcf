package mode

// Publisher is a mode that must know a server's ports before it creates
// the server's endpoint: `docker run -p` and `--expose` are fixed when the
// container is created, and the CNI portmap plugin takes its mappings
// when the network is added. The runner calls Publish before placing
// endpoints, and the engine then listens on exactly those ports; Expose
// serves only them.
type Publisher interface {
	Publish(ports ...int)
}
