package report

import (
	"image/color"
	"slices"
)

// modeColors fixes one colour per well-known mode, so that a mode looks the
// same in every chart and every run. The native baseline is a neutral
// grey: it is the reference, not a contender.
var modeColors = map[string]color.RGBA{
	"host":    {0x59, 0x59, 0x59, 0xff},
	"veth":    {0x1f, 0x77, 0xb4, 0xff},
	"bridge":  {0xff, 0x7f, 0x0e, 0xff},
	"macvlan": {0x2c, 0xa0, 0x2c, 0xff},
	"nat":     {0xd6, 0x27, 0x28, 0xff},
	"ipvlan":  {0x94, 0x67, 0xbd, 0xff},
	"ovs":     {0x8c, 0x56, 0x4b, 0xff},
	"overlay": {0xe3, 0x77, 0xc2, 0xff},
}

// spareColors go, in order, to modes without a colour of their own
// (docker:<driver>, cni:<config>, ...).
var spareColors = []color.RGBA{
	{0x17, 0xbe, 0xcf, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x39, 0x3b, 0x79, 0xff},
	{0x84, 0x3c, 0x39, 0xff}, {0x7b, 0x41, 0x73, 0xff}, {0x63, 0x79, 0x39, 0xff},
	{0x8c, 0x6d, 0x31, 0xff}, {0x6b, 0x6e, 0xcf, 0xff},
}

// palette gives the modes of a report in display order, host first and
// the rest as the run met them, with a colour each.
type palette struct {
	modes  []string
	colors map[string]color.RGBA
}

func newPalette(rep *Report) palette {
	p := palette{colors: map[string]color.RGBA{}}
	for _, c := range rep.Cases {
		if !slices.Contains(p.modes, c.Mode) {
			p.modes = append(p.modes, c.Mode)
		}
	}
	if i := slices.Index(p.modes, baselineMode); i > 0 {
		p.modes = append([]string{baselineMode}, slices.Delete(p.modes, i, i+1)...)
	}
	spare := 0
	for _, m := range p.modes {
		if c, ok := modeColors[m]; ok {
			p.colors[m] = c
			continue
		}
		p.colors[m] = spareColors[spare%len(spareColors)]
		spare++
	}
	return p
}
