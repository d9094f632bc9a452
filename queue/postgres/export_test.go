package postgres

// Redact is redact, for tests.
var Redact = redact

// Channel is the store's NOTIFY channel, for tests.
func (s *Store) Channel() string { return s.channel }
