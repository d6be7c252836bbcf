// Package explain says where a case's CPU time went: it samples the
// kernel's and the processes' call stacks on every CPU while a sample
// runs, and attributes each stack to one stage of the packet's path
// (TCP, netfilter, bridge, veth, the scheduler, ...) by a table of
// symbols (stages.yaml). The attribution takes the innermost frame that
// names a stage, not the leaf, because generic helpers and the cpu-clock
// event's late firing put leaves where no stage is.
//
// Stacks come from perf(1): it owns the ring buffers, lost-sample
// accounting, and symbols of the kernel, its modules and user programs,
// all of which a hand-written perf_event_open reader would redo; cnbench
// starts it disabled and turns it on and off through its control pipe,
// so the profile covers the sample's window and not perf's start-up.
package explain
