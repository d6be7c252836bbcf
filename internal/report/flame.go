package report

import (
	"fmt"
	"html"
	"image/color"
	"sort"
	"strings"

	"cnbench/internal/model"
)

// flameNode is one frame of a flame graph: its callees, the samples
// under it, and the stages those samples were attributed to.
type flameNode struct {
	name     string
	count    int
	stages   map[string]int
	children map[string]*flameNode
}

func newFlameNode(name string) *flameNode {
	return &flameNode{name: name, stages: map[string]int{}, children: map[string]*flameNode{}}
}

// stage is the stage most of the node's samples went to.
func (n *flameNode) stage() string {
	best, bestN := "", -1
	for s, c := range n.stages {
		if c > bestN || c == bestN && s < best {
			best, bestN = s, c
		}
	}
	return best
}

// flame lays folded stacks (root first) into a tree under one root.
func flame(stacks []model.FoldedStack) (*flameNode, int) {
	root := newFlameNode("all")
	depth := 0
	for _, st := range stacks {
		n := root
		n.count += st.Count
		n.stages[st.Stage] += st.Count
		frames := strings.Split(st.Frames, ";")
		depth = max(depth, len(frames))
		for _, f := range frames {
			child, ok := n.children[f]
			if !ok {
				child = newFlameNode(f)
				n.children[f] = child
			}
			child.count += st.Count
			child.stages[st.Stage] += st.Count
			n = child
		}
	}
	return root, depth
}

const (
	flameRow   = 16 // px per frame
	flameWidth = 1100
	flameChar  = 6.2 // px per character at the label size, roughly
)

// flameSVG draws a case's stacks as a flame graph, callers below
// callees, each frame as wide as its share of the samples and coloured
// by the stage most of them were attributed to. Hovering a frame shows
// its name, samples and stage.
func flameSVG(stacks []model.FoldedStack, colors map[string]color.RGBA) string {
	root, depth := flame(stacks)
	if root.count == 0 {
		return ""
	}
	height := (depth + 1) * flameRow
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="flame" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Liberation Sans" font-size="11">`,
		flameWidth, height, flameWidth, height)
	var walk func(n *flameNode, x float64, level int)
	walk = func(n *flameNode, x float64, level int) {
		w := float64(flameWidth) * float64(n.count) / float64(root.count)
		if w < 0.5 {
			return
		}
		y := height - (level+1)*flameRow
		c := colors[n.stage()]
		if c.A == 0 {
			c = color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
		}
		pct := 100 * float64(n.count) / float64(root.count)
		fmt.Fprintf(&b, `<g><title>%s: %d samples (%.1f%%), %s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#%02x%02x%02x" stroke="#fff" stroke-width="0.5"/>`,
			html.EscapeString(n.name), n.count, pct, html.EscapeString(n.stage()), x, y, w, flameRow-1, c.R, c.G, c.B)
		if fit := int((w - 4) / flameChar); fit >= 3 {
			label := n.name
			if len(label) > fit {
				label = label[:fit-2] + ".."
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`, x+2, y+flameRow-4, html.EscapeString(label))
		}
		b.WriteString("</g>")
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		sort.Strings(names)
		cx := x
		for _, name := range names {
			child := n.children[name]
			walk(child, cx, level+1)
			cx += float64(flameWidth) * float64(child.count) / float64(root.count)
		}
	}
	walk(root, 0, 0)
	b.WriteString("</svg>")
	return b.String()
}
