package queries

import (
	"strconv"
	"strings"
)

// placeholders reads the arguments of sql outside comments, quoted literals, quoted identifiers
// and dollar-quoted strings, as pgx's named-argument rewriter does: the highest $n (0: none) and
// whether it uses any @name.
func placeholders(sql string) (highest int, named bool) {
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				return highest, named
			}
			i += end
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return highest, named
			}
			i += 2 + end + 1
		case c == '\'' || c == '"':
			i = closingQuote(sql, i)
		case c == '@':
			named = named || i+1 < len(sql) && isIdentStart(sql[i+1]) && sql[i+1] < 0x80
		case isIdentStart(c):
			for i+1 < len(sql) && (isIdentStart(sql[i+1]) || isDigit(sql[i+1]) || sql[i+1] == '$') {
				i++
			}
		case c == '$':
			j := i + 1
			for j < len(sql) && isDigit(sql[j]) {
				j++
			}
			if j > i+1 {
				n, _ := strconv.Atoi(sql[i+1 : j])
				highest = max(highest, n)
				i = j - 1
				continue
			}
			for j < len(sql) && (isIdentStart(sql[j]) || j > i+1 && isDigit(sql[j])) {
				j++
			}
			if j < len(sql) && sql[j] == '$' { // a dollar-quoted string: skip to its closing tag
				tag := sql[i : j+1]
				end := strings.Index(sql[j+1:], tag)
				if end < 0 {
					return highest, named
				}
				i = j + end + len(tag)
			}
		}
	}
	return highest, named
}

// closingQuote returns the index of the quote that closes the one at open: a doubled quote is
// part of the text, and so is a backslash-escaped one in an E'...' string.
func closingQuote(sql string, open int) int {
	q := sql[open]
	escapes := q == '\'' && open > 0 && (sql[open-1] == 'e' || sql[open-1] == 'E')
	for i := open + 1; i < len(sql); i++ {
		switch {
		case escapes && sql[i] == '\\':
			i++
		case sql[i] == q && i+1 < len(sql) && sql[i+1] == q:
			i++
		case sql[i] == q:
			return i
		}
	}
	return len(sql)
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
