; The properties of one candidate library call: what the selection
; (src/select) knows of a match and asserts, as equalities, next to the
; call's constraints. A call may be made when Z3 finds the conjunction
; satisfiable. A new property is a line here and a field in
; taso_lib_props_t (src/select/library.h).

(define-fun NCHW () Int 0)     ; row-major in the logical shape
(define-fun NHWC () Int 1)     ; channels last, in the buffers
(define-fun BLOCKED () Int 2)  ; row-major buffers, the library's own format inside
(define-fun F32 () Int 0)

(declare-const layout Int)        ; of the call's 4-d activations
(declare-const dtype Int)         ; of its values (float32 only, for now)
(declare-const rank Int)          ; of its result
(declare-const batch Int)         ; the result's axis 0
(declare-const channels_in Int)   ; conv2d: input channels; matmul: the reduced axis
(declare-const channels_out Int)  ; conv2d: output channels; matmul: the result's columns
(declare-const groups Int)        ; conv2d: groups (1 otherwise)
(declare-const kernel_h Int)      ; conv2d: the weight's height and width (0 otherwise)
(declare-const kernel_w Int)
(declare-const stride_h Int)      ; conv2d and pooling: strides (0 otherwise)
(declare-const stride_w Int)

; Writing the result over an operand's buffer (in place). The selection
; sets these from the plan's liveness: the steps in run order, and the
; graph outputs read after the last.
(declare-const overwrites Bool)             ; the call writes over an operand
(declare-const overwritten_read_later Bool) ; a later step, or the caller, reads that operand
(declare-const overwritten_is_input Bool)   ; it is a model input or weight (read again next run)
(declare-const overwritten_read_twice Bool) ; the call also reads it through another operand
(declare-const overwritten_same_size Bool)  ; it has as many values as the result

; A concat made by placing its operands: their producers write each one
; into its slice of the result, and the call copies nothing. The selection
; sets these from the plan: its steps, their in-place writes, its layout.
(declare-const placed Bool)             ; the call places its operands (writes: producers)
(declare-const outer Int)               ; concat: the product of the result's dims before
                                        ; the axis (1: each slice is one block of the buffer)
(declare-const slice_align Int)         ; concat: bytes, the largest power of two up to 256
                                        ; dividing every slice's offset in the result
(declare-const producers_own Bool)      ; every operand is a distinct result of another step
                                        ; into a buffer of its own (no model input or weight,
                                        ; no result written over its operand)
(declare-const placed_overwritten Bool) ; a step writes over an operand or the result while
                                        ; another tensor in that buffer is still read
