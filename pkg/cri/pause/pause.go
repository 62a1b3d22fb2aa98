// Package pause makes berth's sandbox ("pause") image: the container that holds a pod's
// namespaces while its other containers come and go (seed 001's "sandbox 容器"). No registry
// is reachable from berth's machines, so berth writes the image itself: a tiny static
// x86-64 program, assembled here byte by byte, in a one-layer image.
//
// The program ignores SIGCHLD (so that the kernel reaps orphans when the pod shares its PID
// namespace), exits 0 on SIGTERM or SIGINT, and otherwise sleeps in pause(2) forever.
package pause

import (
	"bytes"
	"encoding/binary"
)

// Linux x86-64 numbers the program uses.
const (
	sysRtSigaction = 13
	sysPause       = 34
	sysExitGroup   = 231
	sigINT         = 2
	sigTERM        = 15
	sigCHLD        = 17
	sigIgn         = 1
	saRestorer     = 0x04000000

	loadAddress = 0x400000
	headerSize  = 64 + 56 // ELF header and one program header
)

// Binary returns the pause program as a static ELF executable for linux/amd64.
func Binary() []byte {
	var code bytes.Buffer
	// Each sigaction call: rt_sigaction(sig, &act, NULL, 8). The act's address is patched
	// once the code's length is known.
	type fixup struct{ at, act int }
	var fixups []fixup
	sigaction := func(sig uint32, act int) {
		code.Write([]byte{0xb8}) // mov eax, imm32
		binary.Write(&code, binary.LittleEndian, uint32(sysRtSigaction))
		code.Write([]byte{0xbf}) // mov edi, imm32
		binary.Write(&code, binary.LittleEndian, sig)
		code.Write([]byte{0x48, 0x8d, 0x35}) // lea rsi, [rip+disp32]
		fixups = append(fixups, fixup{at: code.Len(), act: act})
		code.Write([]byte{0, 0, 0, 0})
		code.Write([]byte{0x31, 0xd2})                         // xor edx, edx
		code.Write([]byte{0x41, 0xba, 0x08, 0x00, 0x00, 0x00}) // mov r10d, 8
		code.Write([]byte{0x0f, 0x05})                         // syscall
	}
	const actIgnore, actExit = 0, 1
	sigaction(sigCHLD, actIgnore)
	sigaction(sigTERM, actExit)
	sigaction(sigINT, actExit)
	// loop: pause(); jmp loop
	loop := code.Len()
	code.Write([]byte{0xb8})
	binary.Write(&code, binary.LittleEndian, uint32(sysPause))
	code.Write([]byte{0x0f, 0x05})
	code.Write([]byte{0xeb, byte(int8(loop - (code.Len() + 2)))})
	// handler: exit_group(0). It never returns, so the restorer is only a formality the
	// kernel requires on x86-64; it points here too.
	handler := code.Len()
	code.Write([]byte{0xb8})
	binary.Write(&code, binary.LittleEndian, uint32(sysExitGroup))
	code.Write([]byte{0x31, 0xff, 0x0f, 0x05}) // xor edi, edi; syscall
	for code.Len()%8 != 0 {
		code.WriteByte(0x90)
	}
	// The two struct kernel_sigaction values: handler, flags, restorer, mask.
	acts := []int{code.Len(), code.Len() + 32}
	handlerAddr := uint64(loadAddress + headerSize + handler)
	for _, v := range []uint64{sigIgn, 0, 0, 0, handlerAddr, saRestorer, handlerAddr, 0} {
		binary.Write(&code, binary.LittleEndian, v)
	}
	out := code.Bytes()
	for _, f := range fixups {
		// rip-relative: from the end of the 4-byte displacement.
		disp := int32(acts[f.act] - (f.at + 4))
		binary.LittleEndian.PutUint32(out[f.at:], uint32(disp))
	}
	return append(elfHeader(len(out)), out...)
}

// elfHeader is a 64-bit ELF header with one PT_LOAD segment mapping the whole file
// (read and execute) at loadAddress, entry right after the headers.
func elfHeader(codeLen int) []byte {
	var b bytes.Buffer
	w := func(v interface{}) { binary.Write(&b, binary.LittleEndian, v) }
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}) // 64-bit, little endian, version 1, SysV
	b.Write(make([]byte, 8))
	w(uint16(2))                        // ET_EXEC
	w(uint16(0x3e))                     // x86-64
	w(uint32(1))                        // version
	w(uint64(loadAddress + headerSize)) // entry
	w(uint64(64))                       // program headers' offset
	w(uint64(0))                        // section headers' offset: none
	w(uint32(0))                        // flags
	w(uint16(64))                       // ELF header size
	w(uint16(56))                       // program header size
	w(uint16(1))                        // one program header
	w(uint16(64))                       // section header size
	w(uint16(0))                        // no sections
	w(uint16(0))                        // no section name table
	w(uint32(1))                        // PT_LOAD
	w(uint32(5))                        // PF_R | PF_X
	w(uint64(0))                        // offset
	w(uint64(loadAddress))              // virtual address
	w(uint64(loadAddress))              // physical address
	w(uint64(headerSize + codeLen))     // size in the file
	w(uint64(headerSize + codeLen))     // size in memory
	w(uint64(0x1000))                   // alignment
	return b.Bytes()
}
