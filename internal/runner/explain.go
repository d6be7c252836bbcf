package runner

import (
	"context"
	"path/filepath"
	"strings"

	"cnbench/internal/explain"
	"cnbench/internal/measure"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/site"
	"cnbench/internal/workload"
)

// profilerFor is the profiler of an explained case's samples, or nil. A
// case that cannot be explained here still runs: its outcome says why it
// has no profile. Only a store failure is returned.
func (r *Runner) profilerFor(c *model.Case, p *site.Path) (measure.Profiler, error) {
	if !c.Params.Explain {
		return nil, nil
	}
	note := ""
	if err := explain.Available(); err != nil {
		note = err.Error()
	} else if !p.OnThisMachine() {
		note = "its endpoints run in VM guests or on other machines, whose kernels this machine's perf does not see"
	}
	if note == "" {
		prof := explain.Profiler{Table: explain.Default}
		if row, ok := workload.Lookup(c.Workload); ok && (row.Shape == workload.RequestResponse || row.Shape == workload.ConnectRequestResponse) {
			spaces, err := traceSpaces(p)
			if err != nil {
				r.prog.Printf("case %d: its path is not traced: %v", c.Index, err)
			} else {
				prof.Path = &explain.PathTracer{Spaces: spaces}
			}
		}
		return stackProfiler{prof}, nil
	}
	c.Outcome.ExplainNote = note
	r.prog.Printf("case %d is not explained: %s", c.Index, note)
	if err := r.store.SetCaseOutcome(c.ID, c.Outcome); err != nil {
		return nil, &storeError{err}
	}
	return nil, nil
}

// traceSpaces are the namespaces whose packets the path tracer follows:
// the endpoints' (all clients named "client", all servers "server", so
// that their messages' paths read alike) and every other namespace
// cnbench made for the path's network, named by their role.
func traceSpaces(p *site.Path) ([]explain.TraceNamespace, error) {
	var spaces []explain.TraceNamespace
	at := map[uint32]int{}
	add := func(path, label string, client, server bool) error {
		ino, err := explain.NamespaceInode(path)
		if err != nil {
			return err
		}
		if i, ok := at[ino]; ok {
			s := &spaces[i]
			s.Client, s.Server = s.Client || client, s.Server || server
			if s.Client && s.Server {
				s.Label = "client+server"
			}
			return nil
		}
		at[ino] = len(spaces)
		spaces = append(spaces, explain.TraceNamespace{Inode: ino, Label: label, Client: client, Server: server})
		return nil
	}
	for _, role := range []struct {
		sites  []site.Site
		label  string
		client bool
	}{{p.Clients, "client", true}, {p.Servers, "server", false}} {
		for _, s := range role.sites {
			l, ok := s.(*site.Local)
			if !ok {
				continue
			}
			if err := add(l.Endpoint().NS.Path(), role.label, role.client, !role.client); err != nil {
				return nil, err
			}
		}
	}
	if p.Token != "" {
		names, err := netns.List()
		if err != nil {
			return nil, err
		}
		prefix := p.Token.Name("")
		for _, name := range names {
			if role, ok := strings.CutPrefix(name, prefix); ok {
				if err := add(filepath.Join(netns.RunDir, name), role, false, false); err != nil {
					return nil, err
				}
			}
		}
	}
	return spaces, nil
}

// stackProfiler gives measure explain's recordings.
type stackProfiler struct{ explain.Profiler }

func (s stackProfiler) Start(ctx context.Context) (measure.Profiling, error) {
	return s.Profiler.Start(ctx)
}
