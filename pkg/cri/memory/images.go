package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultImageSize is the size of every image DefaultRegistry serves.
const DefaultImageSize = 5 << 20

// FailPullMarker in an image's name makes DefaultRegistry's pulls of it fail.
const FailPullMarker = "fail-pull"

// Registry is the simulated registry: how a pull of ref (in containerd's full form,
// "docker.io/library/nginx:latest") goes. It is called for every pull, concurrently.
type Registry func(ref string) Pull

// Pull is how the simulated registry serves one image.
type Pull struct {
	// Delay is how long the pull takes; PullImage gives up early when its context ends.
	Delay time.Duration
	// Err, when not nil, is what the pull fails with after Delay: a gRPC status error, or
	// any other error as code Unknown, as it would reach the node agent over gRPC.
	Err error
	// Size is the image's size once pulled.
	Size uint64
	// UID is the user the image runs as (nil: none named, which the node agent's
	// runAsNonRoot check takes as root).
	UID *int64
}

// DefaultRegistry serves every image in delay with the given size, except those whose name
// contains FailPullMarker: their pull fails as a registry without the image makes
// containerd's fail.
func DefaultRegistry(delay time.Duration, size uint64) Registry {
	return func(ref string) Pull {
		p := Pull{Delay: delay, Size: size}
		if strings.Contains(ref, FailPullMarker) {
			p.Err = status.Errorf(codes.NotFound, "failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
		}
		return p
	}
}

// image is one image in the store. Nothing in it changes once stored.
type image struct {
	id          string // "sha256:" + 64 hex digits, derived from the name it was pulled by
	repoTags    []string
	repoDigests []string
	tagSpec     *runtimeapi.ImageSpec // {Image: repoTags[0]}, what ContainerStatus names; nil without tags
	size        uint64
	uid         *int64
	pinned      bool
}

// imageStore finds images by id and by every full reference naming them.
type imageStore struct {
	byID  map[string]*image
	byRef map[string]*image
}

// ref is an image reference, parsed.
type ref struct {
	full   string // "docker.io/library/nginx:latest" or "docker.io/library/nginx@sha256:…"
	repo   string // "docker.io/library/nginx"
	digest bool   // full names a digest rather than a tag
}

// add stores the image r names and returns it; a name already stored keeps its image.
func (s *imageStore) add(r ref, size uint64, uid *int64, pinned bool) *image {
	if img, ok := s.byRef[r.full]; ok {
		return img
	}
	img := &image{id: "sha256:" + hexHash(r.full), size: size, uid: uid, pinned: pinned}
	if r.digest {
		img.repoDigests = []string{r.full}
	} else {
		img.repoTags = []string{r.full}
		img.repoDigests = []string{r.repo + "@sha256:" + hexHash("manifest\x00"+r.full)}
		img.tagSpec = &runtimeapi.ImageSpec{Image: r.full}
	}
	if s.byID == nil {
		s.byID, s.byRef = map[string]*image{}, map[string]*image{}
	}
	s.byID[img.id] = img
	s.byRef[r.full] = img
	return img
}

// resolve finds the image name names: an id or any reference; nil when absent. A name that
// does not parse is an InvalidArgument error.
func (s *imageStore) resolve(name string) (*image, error) {
	if isImageID(name) {
		return s.byID[name], nil
	}
	r, err := parseRef(name)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return s.byRef[r.full], nil
}

func (s *imageStore) remove(img *image) {
	delete(s.byID, img.id)
	for _, r := range img.repoTags {
		delete(s.byRef, r)
	}
	for _, r := range img.repoDigests {
		delete(s.byRef, r)
	}
}

func hexHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func isImageID(s string) bool {
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// parseRef normalizes an image reference as containerd does (Docker's rules): the registry
// defaults to docker.io, its single-name repositories live under library/, the tag defaults
// to latest, and a digest drops the tag.
func parseRef(name string) (ref, error) {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return ref{}, fmt.Errorf("invalid image reference %q", name)
	}
	repo, digest, hasDigest := strings.Cut(name, "@")
	if hasDigest && !strings.Contains(digest, ":") {
		return ref{}, fmt.Errorf("invalid image reference %q: bad digest", name)
	}
	tag := ""
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo, tag = repo[:i], repo[i+1:]
	}
	domain, path := "docker.io", repo
	if i := strings.IndexByte(repo, '/'); i >= 0 {
		if d := repo[:i]; strings.ContainsAny(d, ".:") || d == "localhost" || d != strings.ToLower(d) {
			domain, path = d, repo[i+1:]
		}
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if path == "" || path != strings.ToLower(path) || (tag == "" && strings.HasSuffix(name, ":")) {
		return ref{}, fmt.Errorf("invalid image reference %q: repository name must be lowercase and not empty", name)
	}
	r := ref{repo: domain + "/" + path}
	switch {
	case hasDigest:
		r.full, r.digest = r.repo+"@"+digest, true
	case tag != "":
		r.full = r.repo + ":" + tag
	default:
		r.full = r.repo + ":latest"
	}
	return r, nil
}

// PullImage waits the registry's delay on the runtime's clock (giving up when ctx ends),
// then stores the image or fails as the registry says. It returns the image's id, which
// ContainerConfig then names.
func (r *Runtime) PullImage(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	name := spec.GetImage()
	if isImageID(name) {
		// An id names no repository to pull from: only a present image "pulls".
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.images.byID[name]; ok {
			return name, nil
		}
		return "", status.Errorf(codes.NotFound, "failed to pull and unpack image %q: not found", name)
	}
	ref, err := parseRef(name)
	if err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	pull := r.registry(ref.full)
	if pull.Delay > 0 {
		t := r.clock.NewTimer(pull.Delay)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return "", status.FromContextError(ctx.Err()).Err()
		}
	}
	if pull.Err != nil {
		// As the node agent would get it over gRPC: a status error, Unknown if it had none.
		return "", status.Convert(pull.Err).Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images.add(ref, pull.Size, pull.UID, false).id, nil
}

// ImageStatus reports a present image; an absent one is a response without image and no
// error, as the CRI requires.
func (r *Runtime) ImageStatus(ctx context.Context, spec *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, err := r.images.resolve(spec.GetImage())
	if err != nil {
		return nil, err
	}
	if img == nil {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: img.toCRI()}, nil
}

// ListImages lists the present images, or only the one filter names.
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name := filter.GetImage().GetImage(); name != "" {
		img, err := r.images.resolve(name)
		if err != nil || img == nil {
			return nil, err
		}
		return []*runtimeapi.Image{img.toCRI()}, nil
	}
	out := make([]*runtimeapi.Image, 0, len(r.images.byID))
	for _, img := range r.images.byID {
		out = append(out, img.toCRI())
	}
	return out, nil
}

func (img *image) toCRI() *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.id,
		RepoTags:    img.repoTags,
		RepoDigests: img.repoDigests,
		Size:        img.size,
		Spec:        &runtimeapi.ImageSpec{Image: img.id},
		Pinned:      img.pinned,
	}
	if img.uid != nil {
		out.Uid = &runtimeapi.Int64Value{Value: *img.uid}
	}
	return out
}

// RemoveImage removes the image and every name of it; an absent image is not an error.
// Containers created from it keep running, as in containerd.
func (r *Runtime) RemoveImage(ctx context.Context, spec *runtimeapi.ImageSpec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, err := r.images.resolve(spec.GetImage())
	if err != nil || img == nil {
		return err
	}
	r.images.remove(img)
	return nil
}

// ImageFsInfo reports the images' sizes as the image filesystem's usage, and one inode per
// image.
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var used uint64
	for _, img := range r.images.byID {
		used += img.size
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems: []*runtimeapi.FilesystemUsage{{
			Timestamp:  r.clock.Now().UnixNano(),
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.mountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: used},
			InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(r.images.byID))},
		}},
	}, nil
}
