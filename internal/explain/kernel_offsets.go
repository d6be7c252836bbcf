package explain

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"
)

// kernelOffsets are the byte offsets, in this kernel's structures, of the
// fields the path tracer reads. They come from the kernel's own type
// information (BTF) at load time, so the programs need no compiler and no
// headers of the running kernel.
type kernelOffsets struct {
	skbDev, skbHead, skbNetworkHeader int32
	devName, devNet                   int32
	netInum                           int32
	skNet, skFamily, skNum, skDport   int32
	skProtocol                        int32
}

// kernelFieldOffsets are the running kernel's, read once: every sample
// of every explained case loads the tracer again.
var kernelFieldOffsets = sync.OnceValues(readKernelOffsets)

// readKernelOffsets finds each field in the kernel's BTF.
func readKernelOffsets() (kernelOffsets, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return kernelOffsets{}, fmt.Errorf("read the kernel's type information (BTF): %w", err)
	}
	var o kernelOffsets
	var errs []error
	field := func(dst *int32, path string, size int) {
		off, err := fieldOffset(spec, path, size)
		errs = append(errs, err)
		*dst = int32(off)
	}
	field(&o.skbDev, "sk_buff.dev", 8)
	field(&o.skbHead, "sk_buff.head", 8)
	field(&o.skbNetworkHeader, "sk_buff.network_header", 2)
	field(&o.devName, "net_device.name", 16)
	field(&o.devNet, "net_device.nd_net.net", 8)
	field(&o.netInum, "net.ns.inum", 4)
	field(&o.skNet, "sock.__sk_common.skc_net.net", 8)
	field(&o.skFamily, "sock.__sk_common.skc_family", 2)
	field(&o.skNum, "sock.__sk_common.skc_num", 2)
	field(&o.skDport, "sock.__sk_common.skc_dport", 2)
	field(&o.skProtocol, "sock.sk_protocol", 2)
	return o, errors.Join(errs...)
}

// fieldOffset is the byte offset of a dotted field path from the start
// of its first element, a struct, looking through anonymous structs and
// unions as C does; the field must be size bytes and not a bit field.
func fieldOffset(spec *btf.Spec, path string, size int) (uint32, error) {
	parts := strings.Split(path, ".")
	var s *btf.Struct
	if err := spec.TypeByName(parts[0], &s); err != nil {
		return 0, fmt.Errorf("kernel type %s: %w", parts[0], err)
	}
	var t btf.Type = s
	var off uint32
	for _, name := range parts[1:] {
		m, at, ok := findMember(t, name)
		if !ok {
			return 0, fmt.Errorf("kernel type %s has no field %s", parts[0], strings.Join(parts[1:], "."))
		}
		if m.BitfieldSize != 0 || at%8 != 0 {
			return 0, fmt.Errorf("kernel field %s is a bit field", path)
		}
		off += at / 8
		t = btf.UnderlyingType(m.Type)
	}
	n, err := btf.Sizeof(t)
	if err != nil {
		return 0, fmt.Errorf("kernel field %s: %w", path, err)
	}
	if n != size {
		return 0, fmt.Errorf("kernel field %s is %d bytes, not %d", path, n, size)
	}
	return off, nil
}

// findMember finds a named member of a struct or union, in it or in its
// anonymous members, and its offset in bits from t's start.
func findMember(t btf.Type, name string) (btf.Member, uint32, bool) {
	var members []btf.Member
	switch c := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		members = c.Members
	case *btf.Union:
		members = c.Members
	default:
		return btf.Member{}, 0, false
	}
	for _, m := range members {
		if m.Name == name {
			return m, uint32(m.Offset), true
		}
	}
	for _, m := range members {
		if m.Name != "" {
			continue
		}
		if in, at, ok := findMember(m.Type, name); ok {
			return in, uint32(m.Offset) + at, true
		}
	}
	return btf.Member{}, 0, false
}
