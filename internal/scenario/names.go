package scenario

// CheckNames checks the names a command-line flag gave for one kind of
// axis ("mode", "topology", "engine") against the valid ones: at least
// one, each known and given once. A command that builds its Spec in code
// checks its flags' names with it; the error is an *Error naming the
// flag, as FromAxes's are.
func CheckNames(flag, kind string, names, valid []string) error {
	var errs errorList
	flagWords(&errs, flag, kind, names, valid)
	return errs.err()
}
