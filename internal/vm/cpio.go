package vm

import (
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes the "newc" cpio format, the only one the kernel
// unpacks into its initial root file system. The format is a 110-byte
// ASCII header, the name and the data, each padded to four bytes, and a
// trailer entry; cnbench writes it itself rather than take a dependency
// for sixty lines, and only ever writes, never reads, archives.
//
// Equivalent to: find . | cpio -o -H newc
type cpioWriter struct {
	w     io.Writer
	n     int64 // bytes written, for padding
	inode uint32
}

// File modes of cpio entries, as in stat(2).
const (
	cpioDir     = 0o040000
	cpioFile    = 0o100000
	cpioSymlink = 0o120000
	cpioCharDev = 0o020000
)

type cpioEntry struct {
	name         string
	mode         uint32 // type and permission bits
	size         int64
	major, minor uint32 // of a device node
}

func (c *cpioWriter) header(e cpioEntry) error {
	c.inode++
	name := strings.TrimPrefix(e.name, "/")
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.inode, e.mode, 0, 0, 1, 0, e.size, 0, 0, e.major, e.minor, len(name)+1, 0)
	if err := c.write([]byte(hdr + name + "\x00")); err != nil {
		return err
	}
	return c.pad()
}

func (c *cpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return err
}

func (c *cpioWriter) pad() error {
	if r := c.n % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// dir adds a directory.
func (c *cpioWriter) dir(name string) error {
	return c.header(cpioEntry{name: name, mode: cpioDir | 0o755})
}

// file adds a regular file with the given permissions and contents.
func (c *cpioWriter) file(name string, perm uint32, size int64, data io.Reader) error {
	if err := c.header(cpioEntry{name: name, mode: cpioFile | perm, size: size}); err != nil {
		return err
	}
	n, err := io.Copy(writerFunc(c.write), data)
	if err != nil {
		return fmt.Errorf("cpio: copy %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("cpio: %s changed while archived: %d bytes, expected %d", name, n, size)
	}
	return c.pad()
}

// symlink adds a symbolic link to target.
func (c *cpioWriter) symlink(name, target string) error {
	if err := c.header(cpioEntry{name: name, mode: cpioSymlink | 0o777, size: int64(len(target))}); err != nil {
		return err
	}
	if err := c.write([]byte(target)); err != nil {
		return err
	}
	return c.pad()
}

// charDev adds a character device node, for /dev/console, which the
// kernel opens for init before anything could mount devtmpfs.
func (c *cpioWriter) charDev(name string, major, minor uint32) error {
	return c.header(cpioEntry{name: name, mode: cpioCharDev | 0o600, major: major, minor: minor})
}

// close writes the trailer entry that ends an archive.
func (c *cpioWriter) close() error {
	c.inode = 0
	return c.header(cpioEntry{name: "TRAILER!!!"})
}

type writerFunc func([]byte) error

func (f writerFunc) Write(b []byte) (int, error) {
	if err := f(b); err != nil {
		return 0, err
	}
	return len(b), nil
}
