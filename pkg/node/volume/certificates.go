package volume

import (
	"bytes"
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
)

// issueWaitKey marks the context of a volume's first setup with how long a podCertificate
// source may wait for its first certificate (the resync's context has none: it never waits).
type issueWaitKey struct{}

// credentialMode is the mode of a file that is the pod's own secret (a token, a key): when
// the pod's containers all run as one user, or it has an fsGroup, 0600 (SetOwnership then
// adds the group's read), as the kubelet writes it; else the volume's default mode.
func credentialMode(pod *v1.Pod, defaultMode int32) (int32, *int64) {
	fsUser := fsUserOf(pod)
	if fsUser != nil || (pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil) {
		return 0o600, fsUser
	}
	return defaultMode, fsUser
}

// trustBundlePayload is a clusterTrustBundle source's file: the certificates of the bundle it
// names, or of its signer's bundles that match its selector. A source that matches nothing
// fails the volume unless it is optional, then its file is empty.
func (m *Manager) trustBundlePayload(ctx context.Context, pod *v1.Pod, src *v1.ClusterTrustBundleProjection, defaultMode int32) (map[string]FileProjection, error) {
	if m.trustAnchors == nil {
		return nil, errors.New("ClusterTrustBundle projection is not supported by this node agent")
	}
	optional := src.Optional != nil && *src.Optional
	var data []byte
	var err error
	switch {
	case src.Name != nil:
		data, err = m.trustAnchors.GetTrustAnchorsByName(ctx, *src.Name, optional)
	case src.SignerName != nil:
		data, err = m.trustAnchors.GetTrustAnchorsBySigner(ctx, *src.SignerName, src.LabelSelector, optional)
	default:
		err = errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
	}
	if err != nil {
		return nil, err
	}
	mode, fsUser := credentialMode(pod, defaultMode)
	return map[string]FileProjection{src.Path: {Data: data, Mode: mode, FsUser: fsUser}}, nil
}

// podCertificatePayload is a podCertificate source's files: the key and chain together at
// credentialBundlePath (key first), and each alone at keyPath and certificateChainPath.
func (m *Manager) podCertificatePayload(ctx context.Context, pod *v1.Pod, vol string, index int, src *v1.PodCertificateProjection, defaultMode int32) (map[string]FileProjection, error) {
	if m.podCerts == nil {
		return nil, errors.New("PodCertificate projection is not supported by this node agent")
	}
	wait, _ := ctx.Value(issueWaitKey{}).(time.Duration)
	key, chain, err := m.podCerts.GetPodCertificateCredentialBundle(ctx, pod, vol, index, src, wait)
	if err != nil {
		return nil, err
	}
	mode, fsUser := credentialMode(pod, defaultMode)
	out := map[string]FileProjection{}
	if src.CredentialBundlePath != "" {
		out[src.CredentialBundlePath] = FileProjection{Data: bytes.Join([][]byte{key, chain}, nil), Mode: mode, FsUser: fsUser}
	}
	if src.KeyPath != "" {
		out[src.KeyPath] = FileProjection{Data: key, Mode: mode, FsUser: fsUser}
	}
	if src.CertificateChainPath != "" {
		out[src.CertificateChainPath] = FileProjection{Data: chain, Mode: mode, FsUser: fsUser}
	}
	return out, nil
}
