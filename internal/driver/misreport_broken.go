//go:build cnbench_misreport

package driver

// misreportBytes: this build's native engine reports 64 times the bytes
// its receivers got, a wrong number for validate to catch.
const misreportBytes = 64
