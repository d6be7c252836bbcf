//go:build !cnbench_misreport

package driver

// misreportBytes scales the bytes the native engine's receivers report.
// It is 1; a build with the tag cnbench_misreport makes it 64, so that
// tests can show that validate catches an engine that counts wrong.
const misreportBytes = 1
