package images

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dockerConfigEntry is one registry's credentials in a docker config file.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	// Auth is base64("username:password"); it wins over Username and Password.
	Auth string `json:"auth,omitempty"`
}

// keyring maps registry locations ("registry.example.com", "registry.example.com/team",
// "*.example.com:5000") to credentials, the way docker and the kubelet match them.
type keyring struct {
	creds map[string][]*runtimeapi.AuthConfig
	// index holds the keys sorted in reverse so that a longer (more specific) location
	// matches before its prefix.
	index []string
}

// newKeyring reads the docker config secrets among secrets: kubernetes.io/dockerconfigjson
// (an "auths" map) and kubernetes.io/dockercfg (the bare map). Other secrets are ignored.
func newKeyring(secrets []v1.Secret) (*keyring, error) {
	k := &keyring{creds: map[string][]*runtimeapi.AuthConfig{}}
	for _, s := range secrets {
		var entries map[string]dockerConfigEntry
		switch {
		case s.Type == v1.SecretTypeDockerConfigJson && len(s.Data[v1.DockerConfigJsonKey]) > 0:
			var cfg struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(s.Data[v1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %w", s.Namespace, s.Name, err)
			}
			entries = cfg.Auths
		case s.Type == v1.SecretTypeDockercfg && len(s.Data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(s.Data[v1.DockerConfigKey], &entries); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		default:
			continue
		}
		// Map order is random; sort so that a secret's credentials keep their order.
		locations := make([]string, 0, len(entries))
		for loc := range entries {
			locations = append(locations, loc)
		}
		sort.Strings(locations)
		for _, loc := range locations {
			if err := k.add(loc, entries[loc]); err != nil {
				return nil, fmt.Errorf("pull secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	return k, nil
}

func (k *keyring) add(location string, e dockerConfigEntry) error {
	auth := &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password}
	if e.Auth != "" {
		user, pass, err := decodeAuth(e.Auth)
		if err != nil {
			return err
		}
		auth.Username, auth.Password = user, pass
	}
	key, ok := keyFor(location)
	if !ok {
		return nil // docker ignores what it cannot parse; so does the kubelet
	}
	if _, seen := k.creds[key]; !seen {
		k.index = append(k.index, key)
	}
	k.creds[key] = append(k.creds[key], auth)
	return nil
}

// keyFor turns a config location into its key: the host and path without scheme, where
// "/v1/" and "/v2/" mean the registry itself.
func keyFor(location string) (string, bool) {
	if !strings.HasPrefix(location, "https://") && !strings.HasPrefix(location, "http://") {
		location = "https://" + location
	}
	u, err := url.Parse(location)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

// decodeAuth decodes the "auth" field, padded or not.
func decodeAuth(field string) (string, string, error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", fmt.Errorf("unable to decode auth field: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", fmt.Errorf("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, pass, nil
}

// lookup returns the credentials for a repository ("registry.example.com/team/app"), the
// most specific location first. Docker Hub images also get the credentials stored under
// "index.docker.io" (docker's historical key for the Hub).
func (k *keyring) lookup(repository string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, key := range k.index {
		if locationMatches(key, repository) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repository) {
		out = k.creds["index.docker.io"]
	}
	return out
}

// locationMatches reports whether a key matches a repository: the same port, hosts with the
// same number of dot-separated parts that match as globs ("*.example.com"), and the key's
// path a prefix of the repository's.
func locationMatches(key, repository string) bool {
	keyHost, keyPath, _ := strings.Cut(key, "/")
	repoHost, repoPath, _ := strings.Cut(repository, "/")
	if !strings.HasPrefix("/"+repoPath, "/"+keyPath) {
		return false
	}
	kh, kp := splitHostPort(keyHost)
	rh, rp := splitHostPort(repoHost)
	if kp != rp {
		return false
	}
	kparts, rparts := strings.Split(kh, "."), strings.Split(rh, ".")
	if len(kparts) != len(rparts) {
		return false
	}
	for i := range kparts {
		if ok, err := filepath.Match(kparts[i], rparts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHostPort(hostport string) (string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, ""
	}
	return host, port
}

// isDockerHub reports whether a repository is pulled from Docker Hub.
func isDockerHub(repository string) bool {
	first, _, found := strings.Cut(repository, "/")
	if first == "" {
		return false
	}
	if !found || first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}
