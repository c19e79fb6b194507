; An x86-64 add_f32 with the cpu kernel ABI (as test/unit/TestKernels.c):
;   void add_f32(void *const *bindings, int64_t workgroup)
; z = x + y for the 16 elements of one workgroup. The kiln-inspect tests link
; it with ld.lld into the "cpu" code object whose disassembly they compare with
; llvm-objdump's.

define void @add_f32(ptr %bindings, i64 %workgroup) {
entry:
  %x = load ptr, ptr %bindings
  %y.slot = getelementptr ptr, ptr %bindings, i64 1
  %y = load ptr, ptr %y.slot
  %z.slot = getelementptr ptr, ptr %bindings, i64 2
  %z = load ptr, ptr %z.slot
  %base = mul i64 %workgroup, 16
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %index = add i64 %base, %i
  %xp = getelementptr float, ptr %x, i64 %index
  %yp = getelementptr float, ptr %y, i64 %index
  %zp = getelementptr float, ptr %z, i64 %index
  %a = load float, ptr %xp
  %b = load float, ptr %yp
  %sum = fadd float %a, %b
  store float %sum, ptr %zp
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, 16
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
