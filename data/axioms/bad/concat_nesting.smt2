; Known-bad fixture: the nesting of a channel concat under an operator
; that keeps axis 1's split tree (relu keeps every tree). Wrong under
; split-tree semantics: the two nestings have different trees on axis 1,
; which relu passes on. X27-X29 state the same under pool_avg, pool_max
; and conv2d's data, which drop that tree: the validator must tell the
; two apart (tests/test_validate_tools.sh). Never part of the default set.

;; @axiom BAD6
;; @about relu of a channel concat does not depend on how the concat is nested (WRONG)
;; @shape x = n c h w
;; @shape y = n d h w
;; @shape z = n e h w
(assert (forall ((x T) (y T) (z T))
  (= (relu (concat 1 (concat 1 x y) z))
     (relu (concat 1 x (concat 1 y z))))))
