package config

import (
	"strings"
	"testing"
)

const apiHash = "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"

func TestLoadAPI(t *testing.T) {
	t.Parallel()
	other := HashToken("another token").String()
	tests := []struct {
		name   string
		table  string
		tokens []APIToken
		err    string // a substring of the error
	}{
		{"absent", ``, nil, ""},
		{"read by default", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\n",
			[]APIToken{{Name: "bot", Access: APIRead}}, ""},
		{"two", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\n[[api.token]]\nname = \"ci\"\nhash = \"" + other + "\"\naccess = \"act\"\n",
			[]APIToken{{Name: "bot", Access: APIRead}, {Name: "ci", Access: APIAct}}, ""},
		{"bad access", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\naccess = \"write\"\n", nil,
			`:13: api.token "bot": field access: "write": want "read" or "act"`},
		{"bad hash", "[[api.token]]\nname = \"bot\"\nhash = \"secret\"\n", nil,
			`"secret" is not a token hash: want sha256: and 64 hex digits`},
		{"no hash", "[[api.token]]\nname = \"bot\"\n", nil, `no hash (scheduler -hash-token prints one)`},
		{"no name", "[[api.token]]\nhash = \"" + apiHash + "\"\n", nil, `no name`},
		{"same name", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\n[[api.token]]\nname = \"bot\"\nhash = \"" + other + "\"\n", nil,
			`"bot" is already the name of [[api.token]] #1`},
		{"same token", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\n[[api.token]]\nname = \"ci\"\nhash = \"" + apiHash + "\"\n", nil,
			`the same token as [[api.token]] #1`},
		{"unknown token key", "[[api.token]]\nname = \"bot\"\nhash = \"" + apiHash + "\"\nacess = \"act\"\n", nil,
			`field acess: unknown key "acess" (did you mean "access"?)`},
		{"unknown api key", "[api]\ntokens = []\n", nil, `unknown key "tokens"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("s.toml", []byte(httpBase+"\n"+tt.table))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(cfg.API.Tokens) != len(tt.tokens) {
				t.Fatalf("API.Tokens = %v, want %v", cfg.API.Tokens, tt.tokens)
			}
			for i, want := range tt.tokens {
				if got := cfg.API.Tokens[i]; got.Name != want.Name || got.Access != want.Access {
					t.Errorf("API.Tokens[%d] = %s %s, want %s %s", i, got.Name, got.Access, want.Name, want.Access)
				}
			}
		})
	}
}

func TestAPIToken(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("s.toml", []byte(httpBase+"\n[[api.token]]\nname = \"bot\"\nhash = \""+HashToken("the token of the bot, long enough").String()+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := cfg.API.Token(HashToken("the token of the bot, long enough")); !ok || tok.Name != "bot" {
		t.Errorf("Token(right) = %v, %v, want bot", tok, ok)
	}
	if tok, ok := cfg.API.Token(HashToken("the token of the bot, long enougH")); ok {
		t.Errorf("Token(wrong) = %v, true, want false", tok)
	}
	if h, err := ParseTokenHash(apiHash); err != nil || h.String() != apiHash {
		t.Errorf("ParseTokenHash(%s) = %v, %v, want it back", apiHash, h, err)
	}
}
