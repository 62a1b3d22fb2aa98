package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const testVolumeName = "kube-api-access-abcde"

// newTestServiceAccount is the plugin over a fake API holding objs, its informer synced and
// its volume names fixed.
func newTestServiceAccount(t *testing.T, objs ...runtime.Object) *serviceAccount {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p := newServiceAccount()
	p.generateName = func(prefix string) string { return prefix + "abcde" }
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(client)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return p
}

// admitTwice admits the pod, then admits the result again, as the admission chain may
// reinvoke a plugin: the second run must change nothing.
func admitTwice(t *testing.T, p *serviceAccount, pod *corev1.Pod) error {
	t.Helper()
	if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
		return err
	}
	once := pod.DeepCopy()
	if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
		return err
	}
	if diff := cmp.Diff(once, pod); diff != "" {
		t.Errorf("a second admission changed the pod (-first +second):\n%s", diff)
	}
	return nil
}

func defaultAccount(mutate func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns", UID: "12345"}}
	if mutate != nil {
		mutate(sa)
	}
	return sa
}

var tokenMount = corev1.VolumeMount{Name: testVolumeName, ReadOnly: true, MountPath: DefaultAPITokenMountPath}

func TestServiceAccountTokenVolume(t *testing.T) {
	wantVolume := corev1.Volume{Name: testVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: ptr.To[int32](0o644),
	}}}
	own := corev1.VolumeMount{Name: "my-custom-mount", MountPath: DefaultAPITokenMountPath}
	tests := []struct {
		name    string
		account *corev1.ServiceAccount
		pod     func(*corev1.Pod)
		// want: volumes, then the mounts of the init containers and of the containers.
		wantVolumes []corev1.Volume
		wantInit    [][]corev1.VolumeMount
		wantMain    [][]corev1.VolumeMount
	}{{
		name:        "a container gets the volume",
		account:     defaultAccount(nil),
		wantVolumes: []corev1.Volume{wantVolume},
		wantMain:    [][]corev1.VolumeMount{{tokenMount}},
	}, {
		name:    "init and app containers, ephemeral ones not",
		account: defaultAccount(nil),
		pod: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i"}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d"})
		},
		wantVolumes: []corev1.Volume{wantVolume},
		wantInit:    [][]corev1.VolumeMount{{tokenMount}},
		wantMain:    [][]corev1.VolumeMount{{tokenMount}, {tokenMount}},
	}, {
		name:     "a container that mounts the path keeps its mount, and no volume is added",
		account:  defaultAccount(nil),
		pod:      func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{own} },
		wantMain: [][]corev1.VolumeMount{{own}},
	}, {
		name:    "an init container that mounts the path keeps it; the app container gets the token",
		account: defaultAccount(nil),
		pod: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", VolumeMounts: []corev1.VolumeMount{own}}}
		},
		wantVolumes: []corev1.Volume{wantVolume},
		wantInit:    [][]corev1.VolumeMount{{own}},
		wantMain:    [][]corev1.VolumeMount{{tokenMount}},
	}, {
		name:     "the account opts out",
		account:  defaultAccount(func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(false) }),
		wantMain: [][]corev1.VolumeMount{nil},
	}, {
		name:        "the pod opts in over its account",
		account:     defaultAccount(func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(false) }),
		pod:         func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(true) },
		wantVolumes: []corev1.Volume{wantVolume},
		wantMain:    [][]corev1.VolumeMount{{tokenMount}},
	}, {
		name:     "the pod opts out over its account",
		account:  defaultAccount(func(sa *corev1.ServiceAccount) { sa.AutomountServiceAccountToken = ptr.To(true) }),
		pod:      func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) },
		wantMain: [][]corev1.VolumeMount{nil},
	}, {
		name:    "an existing kube-api-access volume is reused",
		account: defaultAccount(nil),
		pod: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		},
		wantVolumes: []corev1.Volume{{Name: "kube-api-access-zzzzz", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		wantMain:    [][]corev1.VolumeMount{{{Name: "kube-api-access-zzzzz", ReadOnly: true, MountPath: DefaultAPITokenMountPath}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestServiceAccount(t, tt.account)
			pod := newPod(tt.pod)
			if err := admitTwice(t, p, pod); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantVolumes, pod.Spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			mounts := func(cs []corev1.Container) [][]corev1.VolumeMount {
				var out [][]corev1.VolumeMount
				for _, c := range cs {
					out = append(out, c.VolumeMounts)
				}
				return out
			}
			if diff := cmp.Diff(tt.wantInit, mounts(pod.Spec.InitContainers)); diff != "" {
				t.Errorf("init container mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMain, mounts(pod.Spec.Containers)); diff != "" {
				t.Errorf("container mounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceAccountRandomVolumeName(t *testing.T) {
	p := newTestServiceAccount(t, defaultAccount(nil))
	p.generateName = newServiceAccount().generateName
	pod := newPod(nil)
	if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	name := pod.Spec.Volumes[0].Name
	if !strings.HasPrefix(name, "kube-api-access-") || len(name) != len("kube-api-access-")+5 || pod.Spec.Containers[0].VolumeMounts[0].Name != name {
		t.Errorf("volume %q, mount %q: want kube-api-access-<5 random>", name, pod.Spec.Containers[0].VolumeMounts[0].Name)
	}
}

func TestServiceAccountImagePullSecrets(t *testing.T) {
	sa := defaultAccount(func(sa *corev1.ServiceAccount) {
		sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "foo"}, {Name: "bar"}}
	})
	p := newTestServiceAccount(t, sa)
	pod := newPod(nil)
	if err := admitTwice(t, p, pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sa.ImagePullSecrets, pod.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("pull secrets added (-want +got):\n%s", diff)
	}
	// A pod that names its own keeps them.
	own := newPod(func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}} })
	if err := admitTwice(t, p, own); err != nil {
		t.Fatal(err)
	}
	if len(own.Spec.ImagePullSecrets) != 1 || own.Spec.ImagePullSecrets[0].Name != "mine" {
		t.Errorf("pull secrets %v, want only mine", own.Spec.ImagePullSecrets)
	}
}

func TestServiceAccountFetchesUncachedAccount(t *testing.T) {
	p := newTestServiceAccount(t)
	// Created after the informer synced: the plugin must find it through the API.
	if _, err := p.client.CoreV1().ServiceAccounts("ns").Create(context.Background(), defaultAccount(nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := newPod(nil)
	if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
		t.Fatal(err)
	}
}

func TestServiceAccountMirrorPods(t *testing.T) {
	p := newTestServiceAccount(t, defaultAccount(nil))
	mirror := func(mutate func(*corev1.Pod)) *corev1.Pod {
		return newPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			mutate(p)
		})
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"plain", mirror(func(*corev1.Pod) {}), ""},
		{"service account", mirror(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), "a mirror pod may not reference service accounts"},
		{"secret volume", mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), "a mirror pod may not reference secrets"},
		{"env from a secret", mirror(func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		}), "a mirror pod may not reference secrets"},
		{"token projection", mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}), "a mirror pod may not use ServiceAccountToken volume projections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.pod.DeepCopy()
			err := p.Admit(context.Background(), podAttributes(tt.pod, admission.Create), nil)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(before, tt.pod); diff != "" {
					t.Errorf("a mirror pod was changed:\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestServiceAccountMountableSecrets(t *testing.T) {
	enforcing := func(sa *corev1.ServiceAccount) {
		sa.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
		sa.Secrets = []corev1.ObjectReference{{Name: "foo"}}
		sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	}
	secretVolume := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}
		}
	}
	envVar := func(init bool, name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			env := []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
			if init {
				p.Spec.InitContainers = []corev1.Container{{Name: "i", Env: env}}
			} else {
				p.Spec.Containers[0].Env = env
			}
		}
	}
	envFrom := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
		}
	}
	tests := []struct {
		name    string
		account func(*corev1.ServiceAccount)
		pod     func(*corev1.Pod)
		want    string
	}{
		{"referenced volume", enforcing, secretVolume("foo"), ""},
		{"unreferenced volume", enforcing, secretVolume("bar"), `volume with secret.secretName="bar" is not allowed because service account default does not reference that secret`},
		{"unreferenced volume, account not enforcing", nil, secretVolume("bar"), ""},
		{"annotation false", func(sa *corev1.ServiceAccount) {
			enforcing(sa)
			sa.Annotations[EnforceMountableSecretsAnnotation] = "false"
		}, secretVolume("bar"), ""},
		{"referenced env", enforcing, envVar(false, "foo"), ""},
		{"unreferenced env", enforcing, envVar(false, "bar"), `container c with envVar E referencing secret.secretName="bar" is not allowed because service account default does not reference that secret`},
		{"unreferenced init env", enforcing, envVar(true, "bar"), `init container i with envVar E referencing secret.secretName="bar" is not allowed because service account default does not reference that secret`},
		{"unreferenced envFrom", enforcing, envFrom("bar"), `container c with envFrom referencing secret.secretName="bar" is not allowed because service account default does not reference that secret`},
		{"referenced pull secret", enforcing, func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}} }, ""},
		{"unreferenced pull secret", enforcing, func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "other"}} },
			`imagePullSecrets[0].name="other" is not allowed because service account default does not reference that imagePullSecret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestServiceAccount(t, defaultAccount(tt.account))
			err := p.Admit(context.Background(), podAttributes(newPod(tt.pod), admission.Create), nil)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "is forbidden") {
				t.Errorf("got %v, want Forbidden %q", err, tt.want)
			}
		})
	}
}

func TestServiceAccountEphemeralContainers(t *testing.T) {
	sa := defaultAccount(func(sa *corev1.ServiceAccount) {
		sa.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
		sa.Secrets = []corev1.ObjectReference{{Name: "foo"}}
	})
	p := newTestServiceAccount(t, sa)
	attrs := func(pod *corev1.Pod) admission.Attributes {
		return admission.NewAttributesRecord(pod, pod.DeepCopy(), corev1.SchemeGroupVersion.WithKind("Pod"), "ns", pod.Name,
			corev1.SchemeGroupVersion.WithResource("pods"), "ephemeralcontainers", admission.Update, &metav1.UpdateOptions{}, false, nil)
	}
	debug := func(secret string) *corev1.Pod {
		return newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}}}}
		})
	}
	if err := p.Validate(context.Background(), attrs(debug("foo")), nil); err != nil {
		t.Errorf("referenced secret: %v", err)
	}
	err := p.Validate(context.Background(), attrs(debug("bar")), nil)
	if want := `ephemeral container debug with envFrom referencing secret.secretName="bar" is not allowed because service account default does not reference that secret`; err == nil || err.Error() != want {
		t.Errorf("unreferenced secret: got %v, want %q", err, want)
	}
	noAccount := debug("foo")
	noAccount.Spec.ServiceAccountName = ""
	if err := p.Validate(context.Background(), attrs(noAccount), nil); err == nil || !strings.Contains(err.Error(), "no service account specified for pod ns/p") {
		t.Errorf("no service account: %v", err)
	}
	// Ephemeral containers get no token mount: Admit leaves updates alone.
	pod := debug("foo")
	before := pod.DeepCopy()
	if err := p.Admit(context.Background(), attrs(pod), nil); err != nil || !cmp.Equal(before, pod) {
		t.Errorf("admit of an ephemeral container update: %v, changed %v", err, !cmp.Equal(before, pod))
	}
}
