// Package format owns what is generic about judging a session file: the verdicts and damage
// kinds of DESIGN §5.
package format
