// Package version names the build of cnbench that made a result.
package version

// Version is set at build time with
// -ldflags "-X cnbench/internal/version.Version=v1.2.3".
var Version = "0.1.0-dev"
