//go:build !linux

package sqlite

// watchFile is not available here: the pool polls PRAGMA data_version
// every PoolConfig.WatchInterval instead.
func watchFile(path string) (*fileWatch, error) { return nil, errNoFileWatch }
