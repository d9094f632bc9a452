package postgres

// Redact is redact, for tests.
var Redact = redact
