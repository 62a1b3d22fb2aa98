package container

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NewHTTPGetRequest builds the GET of an httpGet handler (a probe or a lifecycle hook) to
// host:port: the handler's scheme (http by default) and path, the userAgent, Accept */*, and
// the handler's headers, a Host header setting the request's host.
func NewHTTPGetRequest(ctx context.Context, g *v1.HTTPGetAction, host string, port int, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}
