// Package layout holds, as tests, the rules of the code's layout that a
// reviewer would otherwise check by eye: which package may import which
// (data and calls flow one way, down the layers), and how long a function
// may grow. It has no code of its own.
package layout
