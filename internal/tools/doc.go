// Package tools reads the output of the external engines cnbench runs side
// by side with its own: iperf3's JSON, sockperf's text, iputils ping's
// text and netperf's keyval lines. The parsers are pure and tested on
// output captured from the real programs in testdata/.
package tools
