// Package housecheck holds tests of the house rules that apply to the
// whole module's source (no function over 150 lines outside tests); it
// has no code of its own.
package housecheck
