"""fuser.lowering"""
