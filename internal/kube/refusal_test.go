package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"cnbench/internal/kubelab"
	"cnbench/internal/mode"
	"cnbench/internal/model"
	"cnbench/internal/netns"
	"cnbench/internal/store/storetest"
)

// TestUnschedulablePodFailsAtOnce taints the node a deployment's pods
// must go on after cnbench chose it, as an operator draining it would:
// the deployment fails with the scheduler's own reason well before the
// time-out, as a failure rather than a skip.
func TestUnschedulablePodFailsAtOnce(t *testing.T) {
	c := requireLab(t)
	k := connect(t, c, imageOK, "default")
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tok := netns.NewToken()
	taint := corev1.Taint{Key: "cnbench.test/blocked", Value: string(tok), Effect: corev1.TaintEffectNoSchedule}
	node := k.Nodes[0].Name
	setTaints(ctx, t, k, node, func(ts []corev1.Taint) []corev1.Taint { return append(ts, taint) })
	defer setTaints(context.Background(), t, k, node, func(ts []corev1.Taint) []corev1.Taint {
		return slices.DeleteFunc(ts, func(x corev1.Taint) bool { return x.MatchTaint(&taint) })
	})

	began := time.Now()
	_, err := k.Deploy(ctx, tok, NetPod, []string{"s1", "c1"}, 1, true)
	took := time.Since(began)
	t.Logf("after %s: %v", took.Round(time.Millisecond), err)
	if err == nil || !strings.Contains(err.Error(), "unschedulable") || !strings.Contains(err.Error(), "cnbench.test/blocked") {
		t.Fatalf("got %v, want the scheduler's reason, naming the taint", err)
	}
	if took > podStartLimit/2 {
		t.Errorf("took %s to fail, want far less than the %s time-out", took, podStartLimit)
	}
	if errors.Is(err, mode.ErrUnsupported) {
		t.Errorf("an unschedulable pod is a failure, not a skip: %v", err)
	}
	if left, err := k.Leftovers(ctx, tok); err != nil || len(left) > 0 {
		t.Errorf("the failed deployment left %v (%v)", left, err)
	}
}

// setTaints rewrites a node's taints with edit, as kubectl taint does.
func setTaints(ctx context.Context, t *testing.T, k *Cluster, node string, edit func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	for {
		n, err := k.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Taints = edit(n.Spec.Taints)
		_, err = k.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("taint %s: %v", node, err)
		}
		time.Sleep(100 * time.Millisecond) // the kubelet updated the node meanwhile
	}
}

// TestRefusedCaseFailsAndTheRunGoesOn runs cnbench as a user whose role,
// in a namespace an administrator gave them, allows pods but not
// Services, with nodes readable and nothing else of the cluster: the run
// measures pod to pod, fails the Service's case with the API server's
// refusal, records why it could not read kube-proxy's mode, and exits 1.
func TestRefusedCaseFailsAndTheRunGoesOn(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // its numbers need only be there: it runs beside the other runs that hold theirs loosely
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := connect(t, c, imageOK, "")
	defer admin.Close()
	tok := netns.NewToken()
	ns, err := admin.namespace(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer grantLimitedUser(ctx, t, admin, tok, ns)()

	scenario := filepath.Join(t.TempDir(), "limited.yaml")
	if err := os.WriteFile(scenario, []byte("modes: [k8s:pod, k8s:service]\ntopologies: [chc]\nworkloads: [tcp_rr]\nsamples: 1\nduration: 300ms\nwarmup: 100ms\n"+
		"kubernetes:\n  namespace: "+ns+"\n  image: "+imageOK+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "r.db")
	var out bytes.Buffer
	ctl := exec.CommandContext(ctx, binary, "run", scenario, "--db", db, "--kubeconfig", c.LimitedKubeconfigs[0])
	ctl.Stdout, ctl.Stderr = &out, &out
	ctl.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := netns.DoAt(c.ControlPlane, ctl.Start); err != nil {
		t.Fatal(err)
	}
	err = ctl.Wait()
	t.Logf("run: %v\n%s", err, out.String())
	if code := ctl.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1: a case failed", code)
	}
	res := storetest.LoadRun(t, db, 1)
	if len(res.Cases) != 2 {
		t.Fatalf("%d cases, want k8s:pod's and k8s:service's", len(res.Cases))
	}
	for _, cs := range res.Cases {
		switch cs.Mode {
		case "k8s:pod":
			if cs.Status != model.StatusOK || len(cs.Samples) != 1 || cs.Samples[0].Values[model.TransactionsPerS] <= 0 {
				t.Errorf("%s: %s (%s), want measured: the role allows pods", cs.Key, cs.Status, cs.Reason)
			}
			if about := cs.Params.ModeConfig; !strings.Contains(about, "forbidden") || !strings.Contains(about, kubelab.LimitedUsers[0]) {
				t.Errorf("%s: the cluster recorded as %s; want kube-proxy's mode refused to %s, saying so", cs.Key, about, kubelab.LimitedUsers[0])
			}
		case "k8s:service":
			if cs.Status != model.StatusFailed || !strings.Contains(cs.Reason, "forbidden") || !strings.Contains(cs.Reason, "services") {
				t.Errorf("%s: %s (%s), want failed with the API server's refusal to create a Service", cs.Key, cs.Status, cs.Reason)
			}
		}
	}
	pods, err := admin.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("the run left pods in %s: %d (%v)", ns, len(pods.Items), err)
	}
}

// grantLimitedUser binds the lab's limited user what a cluster's
// administrator might give a tenant to run cnbench in namespace ns: its
// pods, their ports and Secrets, reading events and the nodes, and no
// Services. It returns what removes the cluster-wide grant.
func grantLimitedUser(ctx context.Context, t *testing.T, k *Cluster, tok netns.Token, ns string) (revoke func()) {
	t.Helper()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubelab.LimitedUsers[0]}}
	labels := map[string]string{TokenLabel: string(tok)}
	all := []string{"get", "list", "watch", "create", "delete"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: tok.Name("tenant"), Labels: labels}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "secrets"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"pods/portforward", "pods/exec"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list"}},
	}}
	nodes := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: tok.Name("nodes"), Labels: labels}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
	}}
	rbac := k.cs.RbacV1()
	_, err := rbac.Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	if err == nil {
		_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, Subjects: subject}, metav1.CreateOptions{})
	}
	if err == nil {
		_, err = rbac.ClusterRoles().Create(ctx, nodes, metav1.CreateOptions{})
	}
	revoke = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rbac.ClusterRoleBindings().Delete(ctx, nodes.Name, metav1.DeleteOptions{})
		rbac.ClusterRoles().Delete(ctx, nodes.Name, metav1.DeleteOptions{})
	}
	if err == nil {
		_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nodes.Name, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodes.Name}, Subjects: subject}, metav1.CreateOptions{})
	}
	if err != nil {
		revoke()
		t.Fatalf("grant %s: %v", kubelab.LimitedUsers[0], err)
	}
	return revoke
}

// TestNodeWithoutCNIIsRefusedSayingWhy holds a node as kubelet reports it
// when the node has no CNI configured to the refusal cnbench gives:
// kubelet's own words, so the user sees why rather than "not Ready".
func TestNodeWithoutCNIIsRefusedSayingWhy(t *testing.T) {
	const msg = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
	n := &corev1.Node{Status: corev1.NodeStatus{
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: msg}},
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}},
	}}
	if got, want := (&Cluster{}).unusable(n), "not Ready (KubeletNotReady: "+msg+")"; got != want {
		t.Errorf("refused %q, want %q", got, want)
	}
	n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if got := (&Cluster{}).unusable(n); got != "" {
		t.Errorf("a Ready node refused: %q", got)
	}
}

// TestDocumentedRoleRunsEveryPath binds the ClusterRole that
// docs/kubernetes.md tells users to apply (configs/kubernetes/rbac.yaml),
// and nothing else, to a user with no other rights, and runs every path
// as that user: each case measures, the record of the cluster holds
// kube-proxy's mode, and nothing is left.
func TestDocumentedRoleRunsEveryPath(t *testing.T) {
	c := requireLab(t)
	t.Parallel() // its numbers need only be there: it runs beside the other runs that hold theirs loosely
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := os.Open(filepath.Join("..", "..", "configs", "kubernetes", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var role rbacv1.ClusterRole
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&role); err != nil || len(role.Rules) == 0 {
		t.Fatalf("configs/kubernetes/rbac.yaml: %v (%d rules)", err, len(role.Rules))
	}
	admin := connect(t, c, imageOK, "default")
	defer admin.Close()
	tok := netns.NewToken()
	role.ObjectMeta = metav1.ObjectMeta{Name: tok.Name("role"), Labels: map[string]string{TokenLabel: string(tok)}}
	rbac := admin.cs.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer rbac.ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: role.ObjectMeta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubelab.LimitedUsers[1]}}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer rbac.ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})

	res, out := controlOnLab(ctx, t, c, filepath.Join(t.TempDir(), "r.db"), "--kubeconfig", c.LimitedKubeconfigs[1],
		"--modes", "k8s:hostnetwork,k8s:pod,k8s:service,k8s:nodeport,k8s:hairpin", "--topologies", "chc", "--workloads", "tcp_stream",
		"--samples", "1", "--duration", "300ms", "--warmup", "0s")
	if len(res.Cases) != 5 {
		t.Fatalf("%d cases, want one per path:\n%s", len(res.Cases), out)
	}
	for _, cs := range res.Cases {
		if cs.Status != model.StatusOK {
			t.Errorf("%s as %s with the documented role: %s: %s", cs.Key, kubelab.LimitedUsers[1], cs.Status, cs.Reason)
		}
		var d Description
		if err := json.Unmarshal([]byte(cs.Params.ModeConfig), &d); err != nil || d.KubeProxyMode != "iptables" {
			t.Errorf("%s: the cluster recorded as %s (%v); want kube-proxy's mode read", cs.Key, cs.Params.ModeConfig, err)
		}
	}
	checkNothingLeft(ctx, t, c, out)
}
