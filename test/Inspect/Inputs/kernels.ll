; Four small AMDGPU kernels the kiln-inspect tests compile with llc and ld.lld
; into a HSACO for each gfx target (the compiler's gfx backend is not needed).
;
;   lds_loop    256 threads; stages a value per thread in a 32 KiB LDS array,
;               then sums squares of neighbours with fma in a loop (LDS-bound)
;   many_regs   64 threads; 128 float accumulators live across a loop
;   spill_regs  many_regs held to 64 VGPRs: spills to scratch (and to AGPRs
;               on gfx942/gfx950)
;   fixed_regs  64 threads; clobbers exactly v0-v96 (97 VGPRs), for occupancy
;               figures that can be derived by hand

@tile = internal addrspace(3) global [8192 x float] poison, align 16

define amdgpu_kernel void @lds_loop(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %gid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %gid, 256
  %idx = add i32 %base, %tid
  %p = getelementptr float, ptr addrspace(1) %in, i32 %idx
  %v = load float, ptr addrspace(1) %p
  %slot = getelementptr [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %slot
  call void @llvm.amdgcn.s.barrier()
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %loop ]
  %j = add i32 %tid, %i
  %jm = and i32 %j, 8191
  %q = getelementptr [8192 x float], ptr addrspace(3) @tile, i32 0, i32 %jm
  %x = load float, ptr addrspace(3) %q
  %sq = fmul float %x, %x
  %acc.next = call float @llvm.fma.f32(float %sq, float 0.5, float %acc)
  %i.next = add i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %o = getelementptr float, ptr addrspace(1) %out, i32 %idx
  store float %acc.next, ptr addrspace(1) %o
  ret void
}

define amdgpu_kernel void @many_regs(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #1 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %off = mul i32 %tid, 128
  %p = getelementptr float, ptr addrspace(1) %in, i32 %off
  %init = load <128 x float>, ptr addrspace(1) %p, align 16
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <128 x float> [ %init, %entry ], [ %acc.next, %loop ]
  %k = add i32 %off, %i
  %q = getelementptr float, ptr addrspace(1) %in, i32 %k
  %b = load <128 x float>, ptr addrspace(1) %q, align 4
  %acc.next = call <128 x float> @llvm.fma.v128f32(<128 x float> %b, <128 x float> %acc, <128 x float> %b)
  %i.next = add i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %o = getelementptr float, ptr addrspace(1) %out, i32 %off
  store <128 x float> %acc.next, ptr addrspace(1) %o, align 16
  ret void
}

define amdgpu_kernel void @spill_regs(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) #2 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %off = mul i32 %tid, 128
  %p = getelementptr float, ptr addrspace(1) %in, i32 %off
  %init = load <128 x float>, ptr addrspace(1) %p, align 16
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <128 x float> [ %init, %entry ], [ %acc.next, %loop ]
  %k = add i32 %off, %i
  %q = getelementptr float, ptr addrspace(1) %in, i32 %k
  %b = load <128 x float>, ptr addrspace(1) %q, align 4
  %acc.next = call <128 x float> @llvm.fma.v128f32(<128 x float> %b, <128 x float> %acc, <128 x float> %b)
  %i.next = add i32 %i, 1
  %done = icmp eq i32 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %o = getelementptr float, ptr addrspace(1) %out, i32 %off
  store <128 x float> %acc.next, ptr addrspace(1) %o, align 16
  ret void
}

define amdgpu_kernel void @fixed_regs() #1 {
  call void asm sideeffect "", "~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7},~{v8},~{v9},~{v10},~{v11},~{v12},~{v13},~{v14},~{v15},~{v16},~{v17},~{v18},~{v19},~{v20},~{v21},~{v22},~{v23},~{v24},~{v25},~{v26},~{v27},~{v28},~{v29},~{v30},~{v31},~{v32},~{v33},~{v34},~{v35},~{v36},~{v37},~{v38},~{v39},~{v40},~{v41},~{v42},~{v43},~{v44},~{v45},~{v46},~{v47},~{v48},~{v49},~{v50},~{v51},~{v52},~{v53},~{v54},~{v55},~{v56},~{v57},~{v58},~{v59},~{v60},~{v61},~{v62},~{v63},~{v64},~{v65},~{v66},~{v67},~{v68},~{v69},~{v70},~{v71},~{v72},~{v73},~{v74},~{v75},~{v76},~{v77},~{v78},~{v79},~{v80},~{v81},~{v82},~{v83},~{v84},~{v85},~{v86},~{v87},~{v88},~{v89},~{v90},~{v91},~{v92},~{v93},~{v94},~{v95},~{v96}"()
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare float @llvm.fma.f32(float, float, float)
declare <128 x float> @llvm.fma.v128f32(<128 x float>, <128 x float>, <128 x float>)

; Fixed workgroup sizes, so llc's own occupancy estimate (which takes the
; range of flat workgroup sizes) assumes the size the artifact launches with.
attributes #0 = { "amdgpu-flat-work-group-size"="256,256" }
attributes #1 = { "amdgpu-flat-work-group-size"="64,64" }
attributes #2 = { "amdgpu-flat-work-group-size"="64,64" "amdgpu-num-vgpr"="64" }
