# test_reference_mutants.sh — the four planted mutants that passed the primary standard at
# the reference suite's own small input scales (issue #19 item 5) fail it now: at those
# scales (randn x 0.01 / 0.1, AdamW's v = |randn| x 1e-6) the outputs sit below the listed
# absolute tolerances, so the op's primary standard is certified, which judges relative to
# a device bound. Each mutant runs on a case drawn the way its reference test draws
# (shapes of the reference tests, smaller where the cost would not fit a ctest): the
# correct sim kernel passes, the mutant FAILs under the op's primary standard, and for the
# two ops whose primary moved, the old pypto rule still lets the mutant through (the
# reason for the move; a change there shows up here).
. "$(dirname "$0")/lib.sh"

ADAMW='"dist":{"w":{"kind":"normal","std":0.02},"g":{"kind":"normal","std":0.01},"m":{"kind":"normal","std":0.001},"v":{"kind":"half_normal","std":1e-6}},"seed":42'
GDR='"params":{"tokens":16,"hv":32,"hqk":32,"dk":128,"dv":128,"qk_norm":"l2"},"dist":{"q":{"kind":"normal","std":0.1},"k":{"kind":"normal","std":0.1},"v":{"kind":"normal","std":0.1},"g":{"kind":"normal","std":0.1},"beta":{"kind":"normal","std":0.1},"h0":{"kind":"const","value":0}},"seed":42'
fa_grad() { # $1 the scale of q, k, v and dO
    echo '{"v":1,"op":"flash_attention_mha_grad","dtype":"bf16","params":{"seqlens":"32,32,32,32,32,32,32,32","heads":8,"head_dim":64},"dist":{"q":{"kind":"normal","std":'"$1"'},"k":{"kind":"normal","std":'"$1"'},"v":{"kind":"normal","std":'"$1"'},"do":{"kind":"normal","std":'"$1"'}},"seed":42}'
}

# verdict SPEC BACKEND [PRIMARY]: prints the case's verdict and deciding standard
verdict() {
    ug case --json --spec "$1" --backend "$2" ${3:+--primary "$3"} >"$T/case.json" 2>"$T/case.err"
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["verdict"], j["primary_standard"])' "$T/case.json"
}

check_mutant() { # SPEC MUTANT PRIMARY [pypto_passes]
    expect_eq "$(verdict "$1" sim)" "PASS $3" "correct sim kernel on the reference-scale case of $2"
    expect_eq "$(verdict "$1" "sim:$2")" "FAIL $3" "$2 under the primary standard at the reference scale"
    if [ "${4:-}" = pypto_passes ]; then
        expect_eq "$(verdict "$1" "sim:$2" pypto)" "PASS pypto" "$2 under pypto at the reference scale (why the primary moved)"
    fi
}

command -v python3 >/dev/null || { echo "python3 is needed to read ulpgym case --json"; exit 77; }
for dt in fp32 bf16; do
    check_mutant '{"v":1,"op":"apply_adamw","dtype":"'$dt'","params":{"rows":64,"cols":2048},'"$ADAMW"'}' mut_l2_decay certified pypto_passes
done
GDR_SPEC='{"v":1,"op":"gated_delta_rule","dtype":"bf16",'"$GDR"'}'
check_mutant "$GDR_SPEC" mut_decay_after certified pypto_passes
check_mutant "$GDR_SPEC" mut_beta_v_only certified pypto_passes
check_mutant "$(fa_grad 0.01)" mut_dk_no_scale certified pypto_passes
check_mutant "$(fa_grad 0.1)" mut_dk_no_scale certified
finish
