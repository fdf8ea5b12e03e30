"""Studies: analyses across finished run folders that answer one question each (an
experiment's ablations, outcast's mechanism).  Each reads run folders only, as figures do,
and writes its table and figure into an output folder; ``scripts/*-ablation.sh`` run the
parts and then call them.  The claims cite the folders they made as causes.  They sit
beside the experiments rather than in them: an experiment's folder holds what
``dcrepro run`` uses (its workload, claims and figures).
"""
