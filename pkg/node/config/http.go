package config

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// urlTimeout bounds one GET of the manifest URL.
const urlTimeout = 10 * time.Second

// NewSourceURL sends the static pods served at url to updates until ctx ends: it GETs url
// (with header) at once and every period, and sends a SET whenever the body changes. The
// body is a Pod or a PodList, YAML or JSON; an empty body means no pods; a body that does not
// parse or validate, or an error status, changes nothing and is logged.
func NewSourceURL(ctx context.Context, url string, header http.Header, nodeName string, period time.Duration, updates chan<- interface{}) {
	s := &sourceURL{
		url:      url,
		header:   header,
		nodeName: nodeName,
		updates:  updates,
		client:   &http.Client{Timeout: urlTimeout},
	}
	klog.FromContext(ctx).V(1).Info("Watching URL", "url", url)
	go s.run(ctx, period)
}

// sourceURL is the http source; its state belongs to the run goroutine.
type sourceURL struct {
	url      string
	header   http.Header
	nodeName string
	updates  chan<- interface{}
	client   *http.Client
	// data is the last body read, so an unchanged body is not parsed again.
	data []byte
	// failures counts consecutive failures, to quiet the log after a few.
	failures int
}

func (s *sourceURL) run(ctx context.Context, period time.Duration) {
	logger := klog.FromContext(ctx).WithValues("source", types.HTTPSource, "url", s.url)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		s.poll(ctx, logger)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (s *sourceURL) poll(ctx context.Context, logger klog.Logger) {
	// A body that makes the decoder panic is a failed read, retried at the next period.
	err := panics.Call(ctx, Component, func() error { return s.extract(ctx, logger) })
	switch {
	case err == nil:
		if s.failures > 0 {
			logger.Info("Successfully read pods from URL")
		}
		s.failures = 0
		return
	case ctx.Err() != nil:
		return
	case s.failures < 3:
		logger.Info("Failed to read pods from URL", "err", err)
	case s.failures == 3:
		logger.Info("Failed to read pods from URL. Dropping verbosity of this message to V(4)", "err", err)
	default:
		logger.V(4).Info("Failed to read pods from URL", "err", err)
	}
	s.failures++
}

func (s *sourceURL) extract(ctx context.Context, logger klog.Logger) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	if s.header != nil {
		req.Header = s.header.Clone()
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := readAtMost(resp.Body, maxConfigLength)
	if err != nil {
		return fmt.Errorf("%s: reading the body: %w", s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", s.url, resp.Status)
	}
	if len(data) == 0 {
		// Emptied: no pods (and the source is seen all the same).
		s.data = nil
		s.send(ctx, []*v1.Pod{})
		return fmt.Errorf("zero-length data received from %s", s.url)
	}
	if bytes.Equal(data, s.data) {
		return nil
	}
	s.data = data

	d := staticPodDefaulter{nodeName: s.nodeName, source: s.url}
	parsed, pod, podErr := d.decodeSinglePod(logger, data)
	if parsed {
		if podErr != nil {
			return podErr
		}
		s.send(ctx, []*v1.Pod{pod})
		return nil
	}
	parsed, pods, listErr := d.decodePodList(logger, data)
	if parsed {
		if listErr != nil {
			return listErr
		}
		s.send(ctx, pods)
		return nil
	}
	return fmt.Errorf("%s: received %q, but couldn't parse as single (%v) or multiple pods (%v)", s.url, data, podErr, listErr)
}

func (s *sourceURL) send(ctx context.Context, pods []*v1.Pod) {
	select {
	case s.updates <- types.PodUpdate{Op: types.SET, Pods: pods, Source: types.HTTPSource}:
	case <-ctx.Done():
	}
}
