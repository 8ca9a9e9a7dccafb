# One data rule and one aggregate rule per algorithm of the registry (aimlib.algorithms): the
# rule names, paths, wildcards, params and resource requests all come from the entry, so a new
# algorithm needs no edit here.
for _name, _alg in ALGORITHMS.items():

    rule:
        name:
            _name
        output:
            update(data_path(_name)),
        log:
            f"logs/{_name}/{{experiment}}/{{channel}}_{{variant}}/"
            "T{T}{cpar}_rho{rho}_d{d}_alpha{alpha}.log",
        conda:
            "../../environment.yml"
        threads: request(_name, "threads")
        resources:
            mem_mb=request(_name, "mem_mb"),
            runtime=request(_name, "runtime"),
            # 1 on a GPU backend (the SLURM plugin's gpu resource: --gpus=1), else 0
            gpu=request(_name, "gpu"),
        params:
            algorithm=_name,
            job=group_params(_name),
            base_seed=PLAN.base_seed,
            version=algorithm_version(_name, "run"),
        script:
            "../scripts/run.py"

    rule:
        name:
            f"{_name}_aggregate"
        input:
            agg_inputs(_name),
        output:
            update(agg_path(_name)),
        log:
            f"logs/{_name}_aggregate/{{experiment}}/{{kind}}_{{channel}}_{{variant}}_"
            "T{T}{cpar}_rho{rho}_d{d}.log",
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=request("light", "mem_mb"),
            runtime=request("light", "runtime"),
        params:
            algorithm=_name,
            version=algorithm_version(_name, "aggregate"),
        script:
            "../scripts/aggregate.py"
