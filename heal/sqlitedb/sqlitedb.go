// Package sqlitedb is what sessionmedic does to an app's SQLite store (OpenClaw's agent
// databases since 2026.8, OpenCode's store): copy it through SQLite's backup API, judge the
// copy as the app's own gate judges the store (integrity_check and foreign_key_check),
// rebuild the indexes whose entries are wrong or whose b-trees cannot be read, and write a
// snapshot back into it, live, through SQLite's own locks
// (../shared/formats/openclaw-sqlite.md).
//
// Every function here runs on the calling goroutine and opens the store by its path with
// SQLite's unix VFS, which follows symlinks and creates the -wal and -shm sidecars beside it:
// a caller running as root runs the steps that open a store (Snapshot's and Restore's
// asSource/asDest, JudgeLive's, Reindex and Rebuild whole) as the tree's owner
// (resolve.AsUser), so that SQLite can do there only what that owner could, and what it
// creates belongs to them; a store whose path leads elsewhere is not used (ErrMoved). Nothing
// here opens a store, its -wal or its -shm by plain file I/O: POSIX locks are per process, and
// any close of the inode would drop the locks of this process's SQLite connection to it.
package sqlitedb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"modernc.org/sqlite"
)

// BusyTimeout is how long a write of sessionmedic waits for the app's write lock, in
// milliseconds: the apps' own (OpenClaw and OpenCode both set 5000).
const BusyTimeout = 5000

// busyPragma makes a connection wait BusyTimeout for another's lock.
var busyPragma = "_pragma=busy_timeout(" + strconv.Itoa(BusyTimeout) + ")"

// asIs runs fn as it is: the identity a store is opened with when the caller gives none.
func asIs(fn func() error) error { return fn() }

// maxProblems bounds the rows integrity_check and foreign_key_check return.
const maxProblems = 100

// conn is one SQLite connection, used on the goroutine that opened it.
type conn struct{ c driver.Conn }

// uri is the file: URI of path with SQLite's own parameters (mode, immutable) and the
// driver's pragmas.
func uri(path string, params ...string) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: strings.Join(params, "&")}
	return u.String()
}

func open(dsn string) (*conn, error) {
	c, err := (&sqlite.Driver{}).Open(dsn)
	if err != nil {
		return nil, err
	}
	return &conn{c: c}, nil
}

func (c *conn) Close() error { return c.c.Close() }

func (c *conn) exec(q string) error {
	_, err := c.c.(driver.ExecerContext).ExecContext(context.Background(), q, nil)
	return err
}

// strings returns the first column of q's rows, as text, at most max of them.
func (c *conn) strings(q string, max int) ([]string, error) {
	rows, err := c.query(q, max)
	var out []string
	for _, r := range rows {
		out = append(out, text(r[0]))
	}
	return out, err
}

// query returns q's rows, at most max of them.
func (c *conn) query(q string, max int) ([][]driver.Value, error) {
	var out [][]driver.Value
	err := c.each(q, func(row []driver.Value) bool {
		out = append(out, row)
		return len(out) < max
	})
	return out, err
}

// each calls fn with q's rows, one at a time (each a new slice), until fn says no more.
func (c *conn) each(q string, fn func(row []driver.Value) (more bool)) error {
	rs, err := c.c.(driver.QueryerContext).QueryContext(context.Background(), q, nil)
	if err != nil {
		return err
	}
	defer rs.Close()
	for {
		row := make([]driver.Value, len(rs.Columns()))
		if err := rs.Next(row); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if !fn(row) {
			return nil
		}
	}
}

func text(v driver.Value) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// ErrMoved: SQLite opened another file than the one named (a symlink on the way to it).
var ErrMoved = errors.New("the store's path leads elsewhere (a symlink on the way): not opened")

// ErrNotDatabase: the file is not a SQLite database (page 1 unreadable: SQLITE_NOTADB).
var ErrNotDatabase = errors.New("file is not a database")

// checkOpened fails unless c's main database is the file real names: SQLite resolves the
// path it opens through symlinks (a swapped directory, a linked store), and says where it
// arrived in database_list.
func (c *conn) checkOpened(real string) error {
	rows, err := c.query("PRAGMA database_list", 4)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if len(r) >= 3 && text(r[1]) == "main" {
			if filepath.Clean(text(r[2])) != filepath.Clean(real) {
				return fmt.Errorf("%w (%s)", ErrMoved, text(r[2]))
			}
			return nil
		}
	}
	return fmt.Errorf("%w (no main database)", ErrMoved)
}

func notDB(err error) error {
	if err != nil && strings.Contains(err.Error(), "file is not a database") {
		return fmt.Errorf("%w: %v", ErrNotDatabase, err)
	}
	return err
}

// Snapshot copies the store at src (its real path) into the new file dst through SQLite's
// backup API: a consistent copy of what its last transaction committed (WAL frames
// included), taken while the app may write, never pinning its WAL beyond the copy. dst must
// not exist; it is created with mode 0600 by the caller's identity and fsynced; on error it
// is removed. asSource runs the steps that open the store (as its owner, when running as
// root; nil: as is).
func Snapshot(src, dst string, asSource func(func() error) error) (size int64, err error) {
	if asSource == nil {
		asSource = asIs
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(dst)
			os.Remove(dst + "-journal")
		}
	}()
	// The copy is opened by the caller's identity (the state directory is not the tree
	// owner's) before the store is, and written with no journal of its own: nothing beside
	// it is created while the thread acts as the store's owner.
	d, err := open(uri(dst, "mode=rw"))
	if err != nil {
		return 0, err
	}
	defer d.Close()
	if err := d.exec("PRAGMA journal_mode=OFF"); err != nil {
		return 0, err
	}
	if err := d.exec("PRAGMA synchronous=OFF"); err != nil {
		return 0, err
	}
	r, ok := d.c.(interface {
		NewRestore(string) (*sqlite.Backup, error)
	})
	if !ok {
		return 0, errors.New("sqlite driver has no backup API")
	}
	err = asSource(func() error {
		mode := readMode(src)
		s, err := open(uri(src, mode...))
		if err != nil {
			return err
		}
		err = s.checkOpened(src)
		s.Close()
		if err != nil {
			return err
		}
		b, err := r.NewRestore(uri(src, append(mode, busyPragma)...))
		if err != nil {
			return notDB(err)
		}
		// In one step, one read transaction: a copy made in steps starts again whenever the
		// app commits between two, and a busy store's might never end. The app's writes go
		// on meanwhile; its checkpoints wait for this read (~2 s a GiB).
		for {
			more, err := b.Step(-1)
			if err != nil {
				b.Finish()
				return notDB(err)
			}
			if !more {
				break
			}
		}
		return b.Finish()
	})
	if err != nil {
		return 0, err
	}
	if err := d.Close(); err != nil {
		return 0, err
	}
	f, err = os.OpenFile(dst, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Judgement is what the app's own gate says of a store: integrity_check's rows and
// foreign_key_check's, and what they name.
type Judgement struct {
	Problems []string // integrity_check's rows, when not the one row "ok" (at most maxProblems)
	Foreign  []string // foreign_key_check's rows: "table rowid N: no row in parent (foreign key i)"
	NotDB    bool     // page 1 is not a SQLite database header

	// Stale: every problem names an index whose entries are wrong (a row missing from it,
	// a wrong count, an entry out of order or not unique): REINDEX of these heals it.
	Stale []string
	// Broken: an index's b-tree cannot be read (its pages are damaged): the indexes named.
	Broken []string
	// Tables: the tables whose b-tree or rows are damaged ("": damage integrity_check does
	// not place in any index).
	Tables []string
	// Orphans: pages no b-tree reaches ("never used") are the only damage: what a broken
	// index's b-tree leaves once the index is made again (Rebuild, cut short before its
	// VACUUM). Their bytes belong to no table; VACUUM gives them back.
	Orphans bool
}

// OK reports whether the store passes the app's gate.
func (j Judgement) OK() bool { return !j.NotDB && len(j.Problems) == 0 && len(j.Foreign) == 0 }

// IndexOnly reports whether integrity_check places the damage in indexes alone: their
// entries wrong (Stale), their b-trees unreadable (Broken), or the pages a broken one left
// (Orphans); no table damaged. foreign_key_check finds parents through those indexes, so a
// broken foreign key beside them may be theirs (a stale primary key's index hides the parent
// row): the store is judged again once they are rebuilt.
func (j Judgement) IndexOnly() bool {
	return !j.OK() && !j.NotDB && len(j.Tables) == 0 && (len(j.Stale)+len(j.Broken) > 0 || j.Orphans)
}

// Judge runs integrity_check and foreign_key_check on the private copy at path (never the
// app's live store: it is opened immutable, with no lock and no sidecar).
func Judge(path string) (Judgement, error) {
	c, err := open(uri(path, "mode=ro", "immutable=1"))
	if err != nil {
		return Judgement{}, err
	}
	defer c.Close()
	return c.judge()
}

// readMode is how a store is opened to be read, so that the files beside it are left as they
// were found: where a -wal holds transactions, read-only (the connection SQLite closes last
// checkpoints the -wal into the store and deletes it, and a read-only one does neither:
// OpenCode keeps its data in the -wal between runs, and a damaged store's -wal is evidence);
// else read-write, reading only (SQLite then removes the -wal and -shm it made).
func readMode(path string) []string {
	if fi, err := os.Lstat(path + "-wal"); err == nil && fi.Size() > 0 {
		return []string{"mode=ro"}
	}
	return []string{"mode=rw", "_pragma=query_only(1)"}
}

// JudgeLive is Judge of the live store at path (its real path), read in one read
// transaction through SQLite's locks (it holds the app's WAL from being checkpointed past it
// while it reads: a one-time check's way, where no private copy is wanted), opened as
// readMode says. asSource runs it as the store's owner where that applies.
func JudgeLive(path string, asSource func(func() error) error) (j Judgement, err error) {
	if asSource == nil {
		asSource = asIs
	}
	err = asSource(func() error {
		c, err := open(uri(path, append(readMode(path), busyPragma)...))
		if err != nil {
			return notDB(err)
		}
		defer c.Close()
		if err := c.checkOpened(path); err != nil {
			return err
		}
		if err := c.exec("BEGIN"); err != nil {
			return notDB(err)
		}
		defer c.exec("ROLLBACK")
		j, err = c.judge()
		return err
	})
	if errors.Is(err, ErrNotDatabase) {
		return Judgement{NotDB: true}, nil
	}
	return j, err
}

func (c *conn) judge() (j Judgement, err error) {
	rows, err := c.strings("PRAGMA integrity_check("+strconv.Itoa(maxProblems)+")", maxProblems)
	stopped := ""
	switch {
	case errors.Is(notDB(err), ErrNotDatabase):
		j.NotDB = true
		return j, nil
	case err != nil && len(rows) > 0:
		// The check stopped at damage it could not walk past, after saying what it found.
		stopped = "integrity_check stopped: " + err.Error()
	case err != nil:
		return j, err
	}
	if !(len(rows) == 1 && rows[0] == "ok") {
		for _, r := range rows {
			for _, l := range strings.Split(strings.TrimPrefix(r, "*** in database main ***\n"), "\n") {
				if l != "" {
					j.Problems = append(j.Problems, l)
				}
			}
		}
	}
	fk, err := c.query("PRAGMA foreign_key_check", maxProblems)
	if err == nil {
		for _, r := range fk {
			if len(r) >= 4 {
				j.Foreign = append(j.Foreign, fmt.Sprintf("%s rowid %s: no row in %s (foreign key %s)", text(r[0]), text(r[1]), text(r[2]), text(r[3])))
			}
		}
	} else if len(j.Problems) == 0 {
		return j, err
	}
	if len(j.Problems) > 0 {
		j.classify(c, stopped != "")
	}
	if stopped != "" {
		j.Problems = append(j.Problems, stopped)
	}
	return j, nil
}

var (
	// SQLite's integrity_check messages about an index's entries (btree well formed).
	staleRe = regexp.MustCompile(`^(?:row \d+ missing from index|wrong # of entries in index|non-unique entry in UNIQUE index|rowid \d+ missing from index) (\S+)$`)
	// ... one that places damage in a b-tree by its root page ("Tree R page P ..."),
	treeRe = regexp.MustCompile(`^Tree (\d+) page \d+`)
	// ... those that name a page alone ("On tree page P cell ...", "Fragmentation of N
	// bytes reported as M on page P", "Multiple uses for byte B of page P"),
	pageRe = regexp.MustCompile(`^(?:On tree page (\d+)|Fragmentation of \d+ bytes reported as \d+ on page (\d+)|Multiple uses for byte \d+ of page (\d+))`)
	// ... pages no b-tree reaches,
	neverRe = regexp.MustCompile(`^Page \d+: never used$|^Page \d+ is never used$`)
	// ... and a table's rows.
	tableRe = regexp.MustCompile(`^(?:(?:NULL|non-\w+|TEXT|NUMERIC|INTEGER|REAL|BLOB) value in|CHECK constraint failed in) (\w+)`)
)

// classify sorts j's problems into stale indexes, broken b-trees (by their root page, named
// from the schema, or by a page of theirs, found with dbstat) and damaged tables; a problem
// it cannot place marks the damage as not index-only (Tables holds "" then).
//
// stopped: integrity_check ended on an error after its rows; that is explained by a broken
// b-tree among them, and otherwise leaves damage unplaced.
func (j *Judgement) classify(c *conn, stopped bool) {
	type object struct{ typ, name string }
	roots := map[int]object{}
	if rows, err := c.query("SELECT type, name, rootpage FROM sqlite_schema", 1<<20); err == nil {
		for _, r := range rows {
			if n, err := strconv.Atoi(text(r[2])); err == nil && n > 0 {
				roots[n] = object{text(r[0]), text(r[1])}
			}
		}
	}
	// The pages the messages name that are no b-tree's root, placed by one walk of dbstat.
	owners := map[int]object{}
	for _, p := range j.Problems {
		if m := pageRe.FindStringSubmatch(p); m != nil {
			n, _ := strconv.Atoi(m[1] + m[2] + m[3])
			if _, ok := roots[n]; !ok {
				owners[n] = object{}
			}
		}
	}
	if len(owners) > 0 {
		// One row a page of the store, streamed: only the pages wanted are kept.
		c.each("SELECT name, pageno FROM dbstat", func(r []driver.Value) bool {
			n, _ := strconv.Atoi(text(r[1]))
			if _, want := owners[n]; want {
				name := text(r[0])
				typ := "table"
				for _, o := range roots {
					if o.name == name {
						typ = o.typ
					}
				}
				owners[n] = object{typ, name}
			}
			return true
		})
	}
	stale, broken, tables := map[string]bool{}, map[string]bool{}, map[string]bool{}
	unplaced := false
	neverUsed := false
	place := func(o object, ok bool, index map[string]bool) {
		switch {
		case !ok || o.name == "":
			unplaced = true
		case o.typ == "index":
			index[o.name] = true
		default:
			tables[o.name] = true
		}
	}
	for _, p := range j.Problems {
		if m := staleRe.FindStringSubmatch(p); m != nil {
			stale[m[1]] = true
			continue
		}
		if neverRe.MatchString(p) {
			neverUsed = true // a page no b-tree reaches: the trace of one that cannot be read
			continue
		}
		if m := treeRe.FindStringSubmatch(p); m != nil {
			root, _ := strconv.Atoi(m[1])
			o, ok := roots[root]
			place(o, ok, broken)
			continue
		}
		if m := pageRe.FindStringSubmatch(p); m != nil {
			// A cell or free space of a page the b-tree still walks: REINDEX rebuilds an
			// index whole; a table's page is the table's damage.
			n, _ := strconv.Atoi(m[1] + m[2] + m[3])
			o, ok := roots[n]
			if !ok {
				o, ok = owners[n]
			}
			place(o, ok, stale)
			continue
		}
		if m := tableRe.FindStringSubmatch(p); m != nil {
			tables[m[1]] = true
			continue
		}
		unplaced = true
	}
	if stopped && len(broken) == 0 && len(tables) == 0 {
		unplaced = true
	}
	j.Orphans = neverUsed && !unplaced && len(stale) == 0 && len(broken) == 0 && len(tables) == 0
	if unplaced {
		tables[""] = true // damage that no index accounts for
	}
	j.Stale, j.Broken, j.Tables = keys(stale), keys(broken), keys(tables)
	// A broken index's wrong entries are its broken b-tree's.
	j.Stale = without(j.Stale, broken)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

func without(s []string, drop map[string]bool) []string {
	var out []string
	for _, x := range s {
		if !drop[x] {
			out = append(out, x)
		}
	}
	return out
}

// quote is name as an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// openWriter opens the live store at path (its real path) to write to it through SQLite's
// locks, waiting BusyTimeout for the app's write lock, once it is the file named; its
// commits are synced when they return (the apps' own connections use synchronous=NORMAL).
func openWriter(path string) (*conn, error) {
	c, err := open(uri(path, "mode=rw", busyPragma))
	if err != nil {
		return nil, err
	}
	err = c.checkOpened(path)
	if err == nil {
		err = c.exec("PRAGMA synchronous=FULL")
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Reindex rebuilds the named indexes of the live store at path (its real path), each in its
// own short transaction through SQLite's locks, waiting BusyTimeout for the app's write lock.
// The app may keep running: its connections see the rebuilt index at their next transaction.
func Reindex(path string, indexes []string) error {
	c, err := openWriter(path)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, ix := range indexes {
		if err := c.exec("REINDEX " + quote(ix)); err != nil {
			return fmt.Errorf("REINDEX %s: %w", ix, err)
		}
	}
	return nil
}

// IsNotExist reports whether err says the store is not there.
func IsNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOENT) || (err != nil && strings.Contains(err.Error(), "unable to open database file"))
}

// ErrNoSQL: an automatic index (a UNIQUE or PRIMARY KEY constraint's) has no CREATE INDEX
// of its own, so its b-tree cannot be made again by the surgery Rebuild does.
var ErrNoSQL = errors.New("an automatic index has no CREATE INDEX statement to make it again")

// Rebuild makes again, live, the named indexes whose b-trees cannot be read (REINDEX and
// DROP INDEX both fail on them with SQLITE_CORRUPT), in one short transaction: each index is
// built anew from its table under a name of its own, the broken one's schema entry removed
// (writable_schema), and the new entry given the index's own name and statement, the schema
// cookie moved on so that every connection reads the schema again at its next transaction.
// Then VACUUM gives back the pages the broken b-trees held (integrity_check reports them as
// never used until then). A crash between the two leaves the indexes sound and those pages
// unused: damage Judge calls a broken index's remnant, healed by VACUUM ([Judgement.Orphans]);
// a crash before the commit leaves the store as it was.
func Rebuild(path string, indexes []string) error {
	c, err := openWriter(path)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(indexes) > 0 {
		if err := c.surgery(indexes); err != nil {
			return err
		}
	}
	if err := c.exec("VACUUM"); err != nil {
		return fmt.Errorf("VACUUM: %w", err)
	}
	return nil
}

func (c *conn) surgery(indexes []string) (err error) {
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.exec("ROLLBACK")
		}
		c.exec("PRAGMA writable_schema=RESET")
	}()
	var creates []string
	for _, ix := range indexes {
		rows, err := c.strings("SELECT sql FROM sqlite_schema WHERE type='index' AND name="+literal(ix), 2)
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return fmt.Errorf("index %s: not in the schema", ix)
		}
		if rows[0] == "" {
			return fmt.Errorf("index %s: %w", ix, ErrNoSQL)
		}
		creates = append(creates, rows[0])
	}
	v, err := c.strings("PRAGMA schema_version", 1)
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return err
	}
	// Each index built under a name of its own (the broken one still holds its name in
	// this connection's schema) ...
	temps := make([]string, len(creates))
	for i, ix := range indexes {
		temps[i] = "sessionmedic_rebuild_" + strconv.Itoa(i)
		sql, ok := renamed(creates[i], ix, temps[i])
		if !ok {
			return fmt.Errorf("index %s: its statement does not name it as expected: %q", ix, creates[i])
		}
		if err := c.exec(sql); err != nil {
			return fmt.Errorf("index %s built anew: %w", ix, err)
		}
	}
	// ... then the broken entry removed and the new one given its name and statement.
	if err := c.exec("PRAGMA writable_schema=ON"); err != nil {
		return err
	}
	for i, ix := range indexes {
		if err := c.exec("DELETE FROM sqlite_schema WHERE type='index' AND name=" + literal(ix)); err != nil {
			return err
		}
		if err := c.exec("UPDATE sqlite_schema SET name=" + literal(ix) + ", sql=" + literal(creates[i]) + " WHERE type='index' AND name=" + literal(temps[i])); err != nil {
			return err
		}
	}
	if err := c.exec("PRAGMA schema_version=" + strconv.FormatInt(n+1, 10)); err != nil {
		return err
	}
	if err := c.exec("PRAGMA writable_schema=OFF"); err != nil {
		return err
	}
	return c.exec("COMMIT")
}

// createIndexRe is the head of a CREATE INDEX statement, up to the index's name.
var createIndexRe = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?`)

// renamed is the CREATE INDEX statement sql with its index's name (name, as written bare or
// quoted) replaced by to.
func renamed(sql, name, to string) (string, bool) {
	m := createIndexRe.FindStringIndex(sql)
	if m == nil {
		return "", false
	}
	rest := sql[m[1]:]
	for _, w := range []string{quote(name), "`" + name + "`", "[" + name + "]", literal(name), name} {
		if strings.HasPrefix(rest, w) {
			after := rest[len(w):]
			if w == name && after != "" && (after[0] == '_' || isWord(after[0])) {
				continue
			}
			return sql[:m[1]] + quote(to) + after, true
		}
	}
	return "", false
}

func isWord(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// literal is s as an SQL string literal.
func literal(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// PageSize is the page size of the store at path, read from its header through SQLite.
func PageSize(path string) (int64, error) {
	c, err := open(uri(path, "mode=ro", "immutable=1"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.pageSize()
}

func (c *conn) pageSize() (int64, error) {
	v, err := c.strings("PRAGMA page_size", 1)
	if err != nil {
		return 0, notDB(err)
	}
	if len(v) != 1 {
		return 0, errors.New("no page size")
	}
	return strconv.ParseInt(v[0], 10, 64)
}

// Restore writes the snapshot at snap (a private copy that passed the gate, opened by the
// caller's identity) into the live store at path (its real path) through the backup API, in
// one transaction through SQLite's locks: the app's connections keep working and see the
// restored store at their next transaction; no file is replaced. Every transaction the store
// committed after the snapshot is gone. The page sizes must agree (a WAL store's backup
// needs it). asDest runs the steps that open the store (as its owner where that applies).
func Restore(snap, path string, asDest func(func() error) error) error {
	if asDest == nil {
		asDest = asIs
	}
	s, err := open(uri(snap, "mode=ro", "immutable=1"))
	if err != nil {
		return err
	}
	defer s.Close()
	want, err := s.pageSize()
	if err != nil {
		return err
	}
	b, ok := s.c.(interface {
		NewBackup(string) (*sqlite.Backup, error)
	})
	if !ok {
		return errors.New("sqlite driver has no backup API")
	}
	return asDest(func() error {
		d, err := openWriter(path)
		if err != nil {
			return err
		}
		got, err := d.pageSize()
		d.Close()
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("the store's pages are %d bytes and the snapshot's %d: not restored", got, want)
		}
		bk, err := b.NewBackup(uri(path, "mode=rw", busyPragma, "_pragma=synchronous(FULL)"))
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(-1)
			if err != nil {
				bk.Finish()
				return err
			}
			if !more {
				break
			}
		}
		return bk.Finish()
	})
}
