package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cnbench/internal/netns"
)

// Swept is what Sweep did: the objects it deleted, and those it left
// with the reason.
type Swept struct {
	Deleted []string
	Kept    []string
}

// Sweep deletes what runs that died left on the cluster cfg names:
// every object labelled with a run token for which dead says so (a
// namespace cnbench created goes with everything in it). Objects of
// other tokens are left and listed: a run of another machine may still
// be using them.
func Sweep(ctx context.Context, cfg Config, dead func(netns.Token) (bool, string)) (Swept, error) {
	c, err := dial(cfg)
	if err != nil {
		return Swept{}, err
	}
	objs, err := c.labelled(ctx, TokenLabel)
	if err != nil {
		return Swept{}, fmt.Errorf("kubernetes: list cnbench's objects: %w", err)
	}
	var sw Swept
	var errs []error
	gone := map[string]bool{} // namespaces deleted, whose objects go with them
	for _, o := range objs {
		isDead, why := dead(o.token)
		if !isDead {
			sw.Kept = append(sw.Kept, fmt.Sprintf("%s (run %s: %s)", o, o.token, why))
			continue
		}
		if gone[o.namespace] {
			continue
		}
		err := c.delete(ctx, o)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("kubernetes: delete %s: %w", o, err))
		default:
			sw.Deleted = append(sw.Deleted, o.String())
			if o.kind == "namespace" {
				gone[o.name] = true
			}
		}
	}
	return sw, errors.Join(errs...)
}

// delete deletes one object, a pod at once.
//
// Equivalent to: kubectl delete KIND NAME [-n NAMESPACE] [--grace-period 0]
func (c *Cluster) delete(ctx context.Context, o object) error {
	var opts metav1.DeleteOptions
	if o.kind == "pod" {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	r := c.meta.Resource(o.gvr)
	if o.namespace == "" {
		return r.Delete(ctx, o.name, opts)
	}
	return r.Namespace(o.namespace).Delete(ctx, o.name, opts)
}
