package images

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The grammar of an image reference, as registries and containerd accept it:
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] component ( "/" component )*
//
// A name whose first part has no "." or ":" and is not "localhost" lives on Docker Hub
// (docker.io), where a one-part name is an official image under "library/".
var (
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	domainRE    = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	tagRE       = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

const (
	defaultDomain = "docker.io"
	defaultTag    = "latest"
	maxNameLength = 255
)

// imageName is a parsed image reference.
type imageName struct {
	// Repository is the full name: domain and path ("docker.io/library/busybox").
	Repository string
	Tag        string
	Digest     string
}

// parseImageName parses an image reference. The repository comes back fully qualified; a
// reference with neither tag nor digest gets the tag "latest".
func parseImageName(image string) (imageName, error) {
	if image == "" {
		return imageName{}, errors.New("image name is empty")
	}
	var n imageName
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, n.Digest = name[:i], name[i+1:]
		if !digestRE.MatchString(n.Digest) {
			return imageName{}, fmt.Errorf("invalid digest %q", n.Digest)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, n.Tag = name[:i], name[i+1:]
		if !tagRE.MatchString(n.Tag) {
			return imageName{}, fmt.Errorf("invalid tag %q", n.Tag)
		}
	}
	if len(name) > maxNameLength {
		return imageName{}, fmt.Errorf("repository name must not be more than %d characters", maxNameLength)
	}
	domain, path := defaultDomain, name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[") {
			domain, path = first, name[i+1:]
		}
	}
	if !domainRE.MatchString(domain) {
		return imageName{}, fmt.Errorf("invalid registry %q", domain)
	}
	if domain == "index.docker.io" {
		domain = defaultDomain
	}
	if path == "" {
		return imageName{}, fmt.Errorf("invalid reference format: %q has no repository", image)
	}
	for _, c := range strings.Split(path, "/") {
		if !componentRE.MatchString(c) {
			if strings.ToLower(c) != c {
				return imageName{}, fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", path)
			}
			return imageName{}, fmt.Errorf("invalid reference format: %q", image)
		}
	}
	if domain == defaultDomain && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	n.Repository = domain + "/" + path
	if n.Tag == "" && n.Digest == "" {
		n.Tag = defaultTag
	}
	return n, nil
}

// applyDefaultImageTag appends ":latest" to a reference with neither tag nor digest, keeping
// the name as written (a short name stays short: the runtime resolves it).
func applyDefaultImageTag(image string) (string, error) {
	n, err := parseImageName(image)
	if err != nil {
		return "", err
	}
	if n.Digest == "" && !strings.HasSuffix(image, ":"+n.Tag) {
		image += ":" + n.Tag
	}
	return image, nil
}

// DefaultPullPolicy is the policy the API server gives a container that names none: Always
// for ":latest" or an untagged image, IfNotPresent otherwise.
func DefaultPullPolicy(image string) v1.PullPolicy {
	if n, err := parseImageName(image); err == nil && n.Tag == defaultTag {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}
