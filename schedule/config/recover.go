package config

import (
	"strconv"
	"strings"
)

// RecoverDB returns the [scheduler] db of a config that does not load,
// when it is a one-line string, so that operator commands find the
// database while the file is broken elsewhere.
func RecoverDB(data []byte) (string, bool) {
	if len(data) > MaxSize {
		return "", false
	}
	src := string(data)
	l := locate(src)
	n, ok := l.lines[pathKey([]string{"scheduler", "db"})]
	if !ok {
		return "", false
	}
	lines := strings.SplitN(src, "\n", n+1)
	text := lines[n-1]
	_, i := parseKeyPath(text, skipSpace(text, 0))
	i = skipSpace(text, i)
	if i >= len(text) || text[i] != '=' {
		return "", false
	}
	i = skipSpace(text, i+1)
	if i >= len(text) || (text[i] != '"' && text[i] != '\'') || strings.HasPrefix(text[i:], `"""`) || strings.HasPrefix(text[i:], "'''") {
		return "", false
	}
	end := closeString(text, i+1, text[i:i+1])
	if end < 0 {
		return "", false
	}
	if rest := skipSpace(text, end); rest < len(text) && text[rest] != '#' {
		return "", false
	}
	v := text[i+1 : end-1]
	if text[i] == '"' {
		var err error
		if v, err = strconv.Unquote(text[i:end]); err != nil {
			return "", false
		}
	}
	return v, v != ""
}
