package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"cnbench/internal/workload"
)

// Every data connection starts with a connHeader sent by the client, so the
// listener learns what to do without any per-run setup on the control path.
const (
	headerMagic   = 0x434e4245 // "CNBE"
	headerVersion = 1
	headerSize    = 32
)

// Workload kinds on the wire.
const (
	kindStream uint8 = 1
	kindRR     uint8 = 2
	// kindCRR opens every connection of a tcp_crr flow: the header and
	// the request go out in one write, and the server closes after its
	// response.
	kindCRR uint8 = 3
	// The UDP kinds open a flow's control connection; its datagrams go
	// to the listener's UDP socket on the same port.
	kindUDPStream uint8 = 4
	kindUDPRR     uint8 = 5
)

// connHeader layout, big-endian:
//
//	0  magic u32 | 4 version u8 | 5 kind u8 | 6 reserved u16
//	8  session u64
//	16 flow index u32 | 20 flow count u32
//	24 request size u32 | 28 response size u32
type connHeader struct {
	kind         uint8
	session      uint64
	flowIndex    uint32
	flowCount    uint32
	requestSize  uint32
	responseSize uint32
}

// kindOf is the wire kind of a workload's data connections, from its
// transport and shape in the workload table.
func kindOf(name string) uint8 {
	row := workload.Get(name)
	udp := row.Transport == workload.UDP
	switch {
	case row.Shape == workload.ConnectRequestResponse:
		return kindCRR
	case row.Shape == workload.RequestResponse && udp:
		return kindUDPRR
	case row.Shape == workload.RequestResponse:
		return kindRR
	case udp:
		return kindUDPStream
	}
	return kindStream
}

// transactional reports whether a kind carries request and response sizes.
func transactional(kind uint8) bool {
	return kind == kindRR || kind == kindCRR || kind == kindUDPRR
}

func (h connHeader) marshal() []byte {
	b := make([]byte, headerSize)
	binary.BigEndian.PutUint32(b[0:], headerMagic)
	b[4] = headerVersion
	b[5] = h.kind
	binary.BigEndian.PutUint64(b[8:], h.session)
	binary.BigEndian.PutUint32(b[16:], h.flowIndex)
	binary.BigEndian.PutUint32(b[20:], h.flowCount)
	binary.BigEndian.PutUint32(b[24:], h.requestSize)
	binary.BigEndian.PutUint32(b[28:], h.responseSize)
	return b
}

func parseConnHeader(b []byte) (connHeader, error) {
	if len(b) != headerSize {
		return connHeader{}, fmt.Errorf("connection header is %d bytes, want %d", len(b), headerSize)
	}
	if m := binary.BigEndian.Uint32(b[0:]); m != headerMagic {
		return connHeader{}, fmt.Errorf("bad connection header magic %#x", m)
	}
	if b[4] != headerVersion {
		return connHeader{}, fmt.Errorf("unsupported connection header version %d", b[4])
	}
	h := connHeader{
		kind:         b[5],
		session:      binary.BigEndian.Uint64(b[8:]),
		flowIndex:    binary.BigEndian.Uint32(b[16:]),
		flowCount:    binary.BigEndian.Uint32(b[20:]),
		requestSize:  binary.BigEndian.Uint32(b[24:]),
		responseSize: binary.BigEndian.Uint32(b[28:]),
	}
	switch {
	case h.kind < kindStream || h.kind > kindUDPRR:
		return h, fmt.Errorf("unknown workload kind %d", h.kind)
	case h.flowCount == 0 || h.flowCount > MaxFlows:
		return h, fmt.Errorf("flow count %d out of range 1..%d", h.flowCount, MaxFlows)
	case h.flowIndex >= h.flowCount:
		return h, fmt.Errorf("flow index %d not below flow count %d", h.flowIndex, h.flowCount)
	case transactional(h.kind) && (h.requestSize == 0 || h.requestSize > MaxMessageSize ||
		h.responseSize == 0 || h.responseSize > MaxMessageSize):
		return h, errors.New("transaction sizes out of range")
	}
	return h, nil
}
