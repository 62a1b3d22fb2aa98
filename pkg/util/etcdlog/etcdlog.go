// Package etcdlog is the logger berth gives etcd, the embedded server and the API server's
// client: etcd's default zap configuration at error level, without its sampler. The sampler
// keeps counters for every level (450 kB a logger) to thin out repeated messages, which
// errors alone never need.
package etcdlog

import (
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns an error-level logger named name, or a no-op logger if zap cannot build one
// (it only fails on an unusable output path, and it writes to stderr).
func New(name string) *zap.Logger {
	config := logutil.DefaultZapLoggerConfig
	config.Level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	config.Sampling = nil
	logger, err := config.Build()
	if err != nil {
		return zap.NewNop()
	}
	return logger.Named(name)
}
