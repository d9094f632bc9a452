//go:build !linux

package sqlite

// watchFile is not available here: the pool polls PRAGMA data_version every
// PoolConfig.WatchInterval.
func watchFile(path string) (*fileWatch, error) { return nil, errNoFileWatch }
